package agent

import (
	"regexp"
	"strings"
	"sync"
	"unicode"
)

// maxVersionLine bounds the version an adapter records with every run: a CLI's
// `--version` line is short, and anything longer is not one.
const maxVersionLine = 120

// versionLine is what a CLI's `--version` prints first: a version number, possibly after
// up to four words naming the program and possibly followed by more text, as in
// "2.1.330 (Claude Code)" or "GitHub Copilot CLI 1.0.102".
var versionLine = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:[A-Za-z][\w-]*\s+){0,4}v?\d+\.\d+(?:\.\d+)?(?:[-+][0-9A-Za-z.-]+)?(?:[\s,(].*)?$`)
})

// VersionOf reduces a CLI's `--version` output to the version the daemon records: its
// first line, trimmed and without a final period, when that line is a version. It
// returns "" and false when the output is empty or its first line is something else (a
// warning, an error, a banner): the CLI's output is untrusted, and a run must not
// record an arbitrary line as its CLI version.
func VersionOf(out []byte) (string, bool) {
	first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	v := strings.TrimSuffix(strings.TrimSpace(first), ".")
	if v == "" || len(v) > maxVersionLine || strings.IndexFunc(v, notPrintable) >= 0 || !versionLine().MatchString(v) {
		return "", false
	}
	return v, true
}

func notPrintable(r rune) bool { return !unicode.IsPrint(r) }
