#!/usr/bin/env bash
# Installs the agent CLIs the contract tests run (claude, copilot, codex, opencode, gemini), at the versions pinned
# in scripts/clis/package-lock.json, into the git-ignored .tools/ folder. Does nothing when
# .tools/ already holds exactly that lockfile's install. The same command serves CI and
# developers: `scripts/install-clis.sh` (make clis).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
src="$root/scripts/clis"
dst="$root/.tools"
stamp="$dst/.installed-lock"

if [ -f "$stamp" ] && cmp -s "$stamp" "$src/package-lock.json" \
	&& [ -x "$dst/node_modules/.bin/claude" ] && [ -x "$dst/node_modules/.bin/copilot" ] \
	&& [ -x "$dst/node_modules/.bin/codex" ] && [ -x "$dst/node_modules/.bin/opencode" ] \
	&& [ -x "$dst/node_modules/.bin/gemini" ]; then
	exit 0
fi
command -v npm >/dev/null || { echo "install-clis: npm not found; install Node.js 20+ to run the contract tests" >&2; exit 1; }

mkdir -p "$dst"
cp "$src/package.json" "$src/package-lock.json" "$dst/"
echo "install-clis: installing pinned agent CLIs into .tools/" >&2
# npm install, not npm ci: npm leaves the other platforms' binaries of opencode-ai out of
# the lockfile it writes and then refuses that lockfile in npm ci. The versions are
# still pinned: exact versions in package.json, and each CLI pins its own platform
# packages exactly.
(cd "$dst" && npm install --no-audit --no-fund --loglevel=error)
for bin in claude copilot codex opencode gemini; do
	"$dst/node_modules/.bin/$bin" --version >/dev/null 2>&1 \
		|| { echo "install-clis: $bin did not run after installing" >&2; exit 1; }
done
cp "$src/package-lock.json" "$stamp"
echo "install-clis: claude $("$dst/node_modules/.bin/claude" --version), copilot $("$dst/node_modules/.bin/copilot" --version | head -1)," \
	"codex $("$dst/node_modules/.bin/codex" --version), opencode $("$dst/node_modules/.bin/opencode" --version)," \
	"gemini $("$dst/node_modules/.bin/gemini" --version)" >&2
