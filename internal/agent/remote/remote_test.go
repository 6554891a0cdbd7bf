package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseTarget_AcceptsHostForms(t *testing.T) {
	tests := []struct {
		in   string
		want Target
	}{
		{"host", Target{Host: "host"}},
		{"build-1.example.com", Target{Host: "build-1.example.com"}},
		{"user@host", Target{Host: "user@host"}},
		{"host:22", Target{Host: "host", Port: 22}},
		{"user@host:2222", Target{Host: "user@host", Port: 2222}},
		{"host:1", Target{Host: "host", Port: 1}},
		{"host:65535", Target{Host: "host", Port: 65535}},
		{"10.0.0.7:2200", Target{Host: "10.0.0.7", Port: 2200}},
		{"  host:22\t", Target{Host: "host", Port: 22}}, // surrounding blanks are trimmed
		{"::1", Target{Host: "::1"}},                    // a bare IPv6 address has no port
		{"fe80::1%eth0", Target{Host: "fe80::1%eth0"}},
		{"[::1]", Target{Host: "::1"}},
		{"[::1]:2222", Target{Host: "::1", Port: 2222}},
		{"deploy@[2001:db8::5]:22", Target{Host: "deploy@2001:db8::5", Port: 22}},
		{"a@b@host:22", Target{Host: "a@b@host", Port: 22}}, // the last @ separates the user
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseTarget(tc.in)
			if err != nil {
				t.Fatalf("ParseTarget(%q): unexpected error %v", tc.in, err)
			}
			if got != tc.want {
				t.Fatalf("ParseTarget(%q) = %+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
}

func TestParseTarget_RejectsBadForms(t *testing.T) {
	tests := []struct {
		name, in, wantErr string
	}{
		{"empty", "", "empty"},
		{"blank", " \t ", "empty"},
		{"option injection", "-oProxyCommand=touch /tmp/pwned", "start with '-'"},
		{"option injection without blanks", "-oProxyCommand=sh", "start with '-'"},
		{"option injection in brackets", "[-oProxyCommand=sh]:22", "start with '-'"},
		{"port option", "-p2222", "start with '-'"},
		{"option as user", "-oProxyCommand=sh@host", "start with '-'"},
		{"inner space", "host name", "whitespace"},
		{"inner tab", "host\tname", "whitespace"},
		{"newline", "host\n-oProxyCommand=sh", "whitespace"},
		{"carriage return", "ho\rst", "whitespace"},
		{"port zero", "host:0", "1 to 65535"},
		{"port too large", "host:65536", "1 to 65535"},
		{"port negative", "host:-1", "1 to 65535"},
		{"port not a number", "host:ssh", "1 to 65535"},
		{"port with space", "[::1]:2 2", "whitespace"},
		{"bracketed port out of range", "[::1]:70000", "1 to 65535"},
		{"unclosed bracket", "[::1", "unclosed"},
		{"junk after bracket", "[::1]22", "after ']'"},
		{"empty brackets", "[]:22", "no host"},
		{"user only", "user@", "no host"},
		{"port only", ":22", "no host"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseTarget(tc.in)
			if err == nil {
				t.Fatalf("ParseTarget(%q) = %+v, want an error containing %q", tc.in, got, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("ParseTarget(%q) error = %q, want it to contain %q", tc.in, err, tc.wantErr)
			}
		})
	}
}

// The host is always preceded by "--", so even a host ParseTarget lets through cannot be
// read by ssh as an option.
func TestCommand_HostFollowsEndOfOptions(t *testing.T) {
	for _, host := range []string{"user@-oProxyCommand=sh", "-oProxyCommand=sh", "-p"} {
		argv := Command(Target{Host: host}, "", "/w", []string{"claude"}, nil)
		i := slices.Index(argv, host)
		if i < 1 || argv[i-1] != "--" {
			t.Fatalf("Command with host %q = %q, want the host right after \"--\"", host, argv)
		}
	}
}

// Whatever an operator writes in worker.ssh_hosts, ParseTarget returns an error or a
// target ssh cannot read as an option, with a port in range.
func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{"host", "user@host:22", "[::1]:2222", "::1", "-oProxyCommand=sh", "a@b@[x]:1", "[", "host:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tg, err := ParseTarget(s)
		if err != nil {
			return
		}
		if tg.Host == "" || strings.HasPrefix(tg.Host, "-") || strings.ContainsAny(tg.Host, " \t\r\n") {
			t.Fatalf("ParseTarget(%q) = %+v: empty host, leading '-' or whitespace", s, tg)
		}
		if tg.Port < 0 || tg.Port > 65535 {
			t.Fatalf("ParseTarget(%q) = %+v: port out of range", s, tg)
		}
		argv := Command(tg, "", "/w", []string{"claude"}, nil)
		if n := len(argv); n < 3 || argv[n-3] != "--" || argv[n-2] != tg.Host {
			t.Fatalf("Command for %+v = %q: want \"--\", the host, the remote line at the end", tg, argv)
		}
	})
}

func TestCommand_Argv(t *testing.T) {
	opts := []string{"-o", "BatchMode=yes", "-o", "ConnectTimeout=30", "-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=3"}
	join := func(parts ...[]string) []string { return slices.Concat(parts...) }
	tests := []struct {
		name      string
		target    Target
		strict    string
		workspace string
		program   []string
		args      []string
		want      []string
	}{
		{
			name:   "default strictness, no port",
			target: Target{Host: "worker1"}, workspace: "/srv/ws/ABC-1", program: []string{"claude"},
			args: []string{"-p", "--output-format", "stream-json"},
			want: join([]string{"-o", "StrictHostKeyChecking=accept-new"}, opts,
				[]string{"--", "worker1", announcePGID + "cd '/srv/ws/ABC-1' && 'claude' '-p' '--output-format' 'stream-json'"}),
		},
		{
			name:   "explicit strictness and port",
			target: Target{Host: "deploy@worker1", Port: 2222}, strict: "yes", workspace: "/w", program: []string{"claude"},
			want: join([]string{"-o", "StrictHostKeyChecking=yes"}, opts,
				[]string{"-p", "2222", "--", "deploy@worker1", announcePGID + "cd '/w' && 'claude'"}),
		},
		{
			name:   "IPv6 host, several program words, hostile argument",
			target: Target{Host: "::1", Port: 22}, strict: "no", workspace: "/w/it's", program: []string{"npx", "claude"},
			args: []string{"--append-system-prompt", "say 'hi'; $(rm -rf /)"},
			want: join([]string{"-o", "StrictHostKeyChecking=no"}, opts,
				[]string{"-p", "22", "--", "::1", announcePGID + `cd '/w/it'\''s' && 'npx' 'claude' '--append-system-prompt' 'say '\''hi'\''; $(rm -rf /)'`}),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Command(tc.target, tc.strict, tc.workspace, tc.program, tc.args)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Command argv:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "''"},
		{"plain", "'plain'"},
		{"it's", `'it'\''s'`},
		{"'", `''\'''`},
		{"''", `''\'''\'''`},
		{`"$(x)"`, `'"$(x)"'`},
		{"a\nb", "'a\nb'"},
		{`back\slash`, `'back\slash'`},
	}
	for _, tc := range tests {
		if got := Quote(tc.in); got != tc.want {
			t.Errorf("Quote(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// hostileStrings are arguments that would run commands, expand, split or glob if they
// reached the shell unquoted. "PWNED" names the file their commands would create.
func hostileStrings(sentinel string) []string {
	return []string{
		"",
		"plain",
		"it's",
		"'",
		"''",
		"'\\''",
		`"double" "quotes`,
		"$(touch PWNED)",
		"$(touch " + sentinel + ")",
		"`touch PWNED`",
		"'; touch PWNED; '",
		"; touch PWNED",
		"&& touch PWNED",
		"|| touch PWNED",
		"| tee PWNED",
		"> PWNED",
		"< /etc/passwd",
		"& touch PWNED &",
		"line one\nline two\ntouch PWNED",
		"\n",
		"trailing newline\n",
		"\r\n",
		"tab\there",
		`back\slash \' \"`,
		"\\",
		"*",
		"?????",
		"[d]ecoy",
		"~",
		"~root/x",
		"$HOME $0 $@ $# ${IFS} $$",
		"${x:-$(touch PWNED)}",
		"!! !$",
		"# not a comment",
		"a b  c",
		"--",
		"-n",
		"-e \\0",
		"%s %d %%",
		"\xff\xfe not UTF-8 \x80",
		"\x01\x1b[31mcontrol\x7f",
		"émoji 🚀 ünïcödé",
		strings.Repeat("a'b\"c$d`e\\f;g\n", 1500), // ~21 KB, ~27 KB quoted
	}
}

// argvPrinter writes an executable shell script at path that prints the working
// directory and then each argument, each followed by a NUL byte.
func argvPrinter(t *testing.T, path string) {
	t.Helper()
	script := "#!/bin/sh\nprintf '%s\\0' \"$PWD\" \"$@\"\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// hostileDirName is a valid file name built from shell syntax.
const hostileDirName = "ws 'single' \"double\" $(touch PWNED) `touch PWNED` ; && | * ? [x] \\ \t\n ~ é \xff"

// Running RemoteLine through each POSIX shell found here must deliver the workspace and
// every argument byte for byte, and must run nothing but the program.
func TestRemoteLine_ShellRoundTrip(t *testing.T) {
	var shells []string
	for _, sh := range []string{"sh", "dash", "bash", "ksh", "mksh", "zsh"} {
		if p, err := exec.LookPath(sh); err == nil {
			shells = append(shells, p)
		}
	}
	if len(shells) == 0 {
		t.Skip("no POSIX shell on PATH")
	}
	root := t.TempDir()
	ws := filepath.Join(root, hostileDirName)
	binDir := filepath.Join(root, "bin $(touch PWNED) 'q'")
	start := filepath.Join(root, "start") // the shell's working directory before cd
	for _, d := range []string{ws, binDir, start} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A file for unquoted globs to match.
	if err := os.WriteFile(filepath.Join(ws, "decoy"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	printer := filepath.Join(binDir, "print 'argv' $(x)")
	argvPrinter(t, printer)
	sentinel := filepath.Join(root, "PWNED")
	args := hostileStrings(sentinel)

	programs := [][]string{{printer}, {"env", printer}}
	for _, shell := range shells {
		for _, program := range programs {
			t.Run(fmt.Sprintf("%s/%d-word program", filepath.Base(shell), len(program)), func(t *testing.T) {
				line := RemoteLine(ws, program, args)
				// Bounded, so that a quoting regression that makes the line wait on
				// something fails the test instead of hanging it.
				ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
				defer cancel()
				cmd := exec.CommandContext(ctx, shell, "-c", line)
				cmd.Dir = start
				cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + start, "IFS= \t\n"}
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("%s -c RemoteLine(...): %v; stderr: %s", shell, err, stderr.String())
				}
				got := strings.Split(string(out), "\x00")
				if len(got) == 0 || got[len(got)-1] != "" {
					t.Fatalf("output does not end with NUL: %q", out)
				}
				got = got[:len(got)-1]
				if len(got) != 1+len(args) {
					t.Fatalf("the program got %d arguments, want %d; output %q", len(got)-1, len(args), out)
				}
				if got[0] != ws {
					t.Errorf("working directory = %q, want %q", got[0], ws)
				}
				for i, want := range args {
					if got[1+i] != want {
						t.Errorf("argument %d = %q, want %q", i, got[1+i], want)
					}
				}
				if stderr.Len() > 0 {
					t.Errorf("unexpected stderr: %q", stderr.String())
				}
			})
		}
	}

	var pwned []string
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "PWNED" {
			pwned = append(pwned, path)
		}
		return nil
	})
	if len(pwned) > 0 {
		t.Fatalf("a hostile string ran a command: %q exist", pwned)
	}
	entries, _ := os.ReadDir(ws)
	if len(entries) != 1 || entries[0].Name() != "decoy" {
		t.Fatalf("workspace holds %v, want only the decoy file", entries)
	}
}

// The test's parser must agree with a real shell, or the fuzz target proves nothing.
func TestPosixTokens_AgreesWithQuote(t *testing.T) {
	args := hostileStrings("/tmp/PWNED")
	line := RemoteLine("/w/"+hostileDirName, []string{"npx", "claude"}, args)
	got, err := posixTokens(line)
	if err != nil {
		t.Fatalf("posixTokens(RemoteLine(...)): %v", err)
	}
	want := expectedTokens("/w/"+hostileDirName, []string{"npx", "claude"}, args)
	if !slices.Equal(got, want) {
		t.Fatalf("posixTokens(RemoteLine(...)):\n got %q\nwant %q", got, want)
	}
	for _, bad := range []string{"'open", "a;b", "$(x)", "`x`", "a\nb", "x*", "a & b", `\`, `"x"`, "#c", "a|b"} {
		if toks, err := posixTokens(bad); err == nil {
			t.Errorf("posixTokens(%q) = %q, want an error (unquoted shell syntax)", bad, toks)
		}
	}
}

func FuzzQuote(f *testing.F) {
	for _, s := range hostileStrings("/tmp/PWNED") {
		f.Add("/srv/ws/"+s, "claude", s, "tail")
	}
	f.Add("/w", "it's", "'\\''", "")
	f.Fuzz(func(t *testing.T, workspace, program, arg1, arg2 string) {
		args := []string{arg1, arg2}
		line := RemoteLine(workspace, []string{program}, args)
		got, err := posixTokens(line)
		if err != nil {
			t.Fatalf("RemoteLine(%q, %q, %q) = %q leaves shell syntax unquoted: %v", workspace, program, args, line, err)
		}
		if want := expectedTokens(workspace, []string{program}, args); !slices.Equal(got, want) {
			t.Fatalf("RemoteLine(%q, %q, %q) = %q parses as\n %q\nwant %q", workspace, program, args, line, got, want)
		}
	})
}

// opAnd stands for an unquoted && operator among posixTokens' words.
const opAnd = "\x00&&"

func expectedTokens(workspace string, program, args []string) []string {
	return slices.Concat([]string{"cd", workspace, opAnd}, program, args)
}

// posixTokens splits line into the words and operators a POSIX shell sees (XCU 2.3,
// 2.2), for the little syntax RemoteLine should produce: single-quoted text, a
// backslash escaping the next byte, unquoted letters, digits and "_./-", blanks, and
// the && operator, returned as opAnd. Any other unquoted byte is an error, since the
// shell would give it a meaning (expansion, redirection, globbing, a comment, another
// command), and so is an unterminated quote.
func posixTokens(line string) ([]string, error) {
	var toks []string
	var word []byte
	inWord := false
	end := func() {
		if inWord {
			toks = append(toks, string(word))
			word, inWord = word[:0], false
		}
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			end()
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated single quote")
			}
			word = append(word, line[i+1:i+1+j]...)
			inWord = true
			i += j + 1
		case c == '\\':
			if i+1 >= len(line) || line[i+1] == '\n' {
				return nil, errors.New("backslash at the end of the line or before a newline")
			}
			word = append(word, line[i+1])
			inWord = true
			i++
		case c == '&' && i+1 < len(line) && line[i+1] == '&':
			end()
			toks = append(toks, opAnd)
			i++
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', strings.IndexByte("_./-", c) >= 0:
			word = append(word, c)
			inWord = true
		default:
			return nil, fmt.Errorf("unquoted %q at byte %d", c, i)
		}
	}
	end()
	return toks, nil
}

func TestParsePGID(t *testing.T) {
	cases := []struct {
		stderr string
		pgid   int
		ok     bool
	}{
		{PGIDMarker + "4242\nWarning: Permanently added 'h' to known hosts\n", 4242, true},
		{"Warning: first\n" + PGIDMarker + "17\n", 17, true},
		{PGIDMarker + "1\n", 0, false}, // never init
		{PGIDMarker + "\n", 0, false},
		{"nothing here", 0, false},
		{PGIDMarker + "42", 0, false},     // still being written: 42 may become 4217
		{PGIDMarker + "42 x\n", 0, false}, // not the shell's line
	}
	for _, c := range cases {
		pgid, ok := ParsePGID(c.stderr)
		if pgid != c.pgid || ok != c.ok {
			t.Errorf("ParsePGID(%q) = %d, %v; want %d, %v", c.stderr, pgid, ok, c.pgid, c.ok)
		}
	}
	if got := StripPGID("a\n" + PGIDMarker + "12\nb\n"); got != "a\nb\n" {
		t.Errorf("StripPGID = %q", got)
	}
}

// The announcing prefix really names the shell's process group when the shell leads
// its own session, as sshd starts it.
func TestCommand_AnnouncesTheProcessGroup(t *testing.T) {
	setsid, err := exec.LookPath("setsid")
	if err != nil {
		t.Skip("setsid not found")
	}
	line := Command(Target{Host: "h"}, "", t.TempDir(), []string{"sh"}, []string{"-c", "ps -o pgid= -p $$"})
	cmd := exec.Command(setsid, "sh", "-c", line[len(line)-1])
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Skipf("running under setsid: %v (%s)", err, stderr.String())
	}
	pgid, ok := ParsePGID(stderr.String())
	if !ok || strings.TrimSpace(stdout.String()) != strconv.Itoa(pgid) {
		t.Errorf("announced %d (%v), the agent's group is %q", pgid, ok, strings.TrimSpace(stdout.String()))
	}
}

func TestKillCommand(t *testing.T) {
	argv := KillCommand(Target{Host: "h", Port: 2200}, "yes", 4242, 5*time.Second)
	script := argv[len(argv)-1]
	for _, want := range []string{"kill -TERM -- -4242", "-lt 5 ]", "kill -KILL -- -4242"} {
		if !strings.Contains(script, want) {
			t.Errorf("kill script %q lacks %q", script, want)
		}
	}
	if argv[len(argv)-2] != "h" || !slices.Contains(argv, "StrictHostKeyChecking=yes") || !slices.Contains(argv, "2200") {
		t.Errorf("argv = %q", argv)
	}
}
