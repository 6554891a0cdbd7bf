package postgres

import (
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// t0 is a fixed time for records the tests write.
var t0 = time.Date(2026, 3, 30, 14, 20, 0, 0, time.UTC)

func TestRedact_HidesEveryPassword(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"url", "postgres://sortie:s3cret@db:5432/sortie?sslmode=require",
			"postgres://sortie:xxxxx@db:5432/sortie?sslmode=require"},
		{"postgresql scheme", "postgresql://u:pw@h/d", "postgresql://u:xxxxx@h/d"},
		{"percent-encoded password", "postgres://u:p%40ss%2Fw@h/d", "postgres://u:xxxxx@h/d"},
		{"no password", "postgres://u@h:5432/d", "postgres://u@h:5432/d"},
		{"empty password", "postgres://u:@h/d", "postgres://u:@h/d"},
		{"no userinfo", "postgres://h/d?sslmode=disable", "postgres://h/d?sslmode=disable"},
		{"query password", "postgres://u@h/d?sslmode=disable&password=s3cret",
			"postgres://u@h/d?sslmode=disable&password=xxxxx"},
		{"query sslpassword", "postgres://u@h/d?sslpassword=key-pw", "postgres://u@h/d?sslpassword=xxxxx"},
		{"encoded query key", "postgres://u@h/d?pass%77ord=s3cret", "postgres://u@h/d?pass%77ord=xxxxx"},
		{"multi-host", "postgres://u:pw@h1:5432,h2:5433/d", "postgres://u:xxxxx@h1:5432,h2:5433/d"},
		// An unencoded @, / or ? strands part of the password outside the userinfo: all
		// up to the last @ goes.
		{"unencoded @ in password", "postgres://u:p@ss@h/d", "postgres://u:xxxxx@xxxxx@h/d"},
		{"unencoded / in password", "postgres://u:pa/ss@h/d", "postgres://xxxxx@h/d"},
		{"unencoded ? in password", "postgres://u:pa?ss@h/d", "postgres://u:xxxxx@h/d"},
		{"another scheme", "POSTGRES://u:pw@h/d", "POSTGRES://u:xxxxx@h/d"},
		{"key=value", "host=db user=sortie password=s3cret dbname=sortie",
			"host=db user=sortie password=xxxxx dbname=sortie"},
		{"key=value quoted", `host=db password='s3 cr\'et' sslmode=require`,
			"host=db password=xxxxx sslmode=require"},
		{"key=value spaced", "host=db password = s3cret user=u", "host=db password = xxxxx user=u"},
		{"key=value escaped space", `password=s3\ cret user=u`, "password=xxxxx user=u"},
		{"key=value sslpassword", "sslpassword=k host=h", "sslpassword=xxxxx host=h"},
		// As in libpq, white space after = does not end a value: the password is "host=h".
		{"key=value space after equals", "password= host=h", "password= xxxxx"},
		{"key=value empty quoted password", "password='' host=h", "password='' host=h"},
		// What cannot be tokenised is hidden whole from there on.
		{"key=value unquoted space", "host=h password=se cret", "host=h password=xxxxx xxxxx"},
		{"key=value unterminated quote", "host=h password='s3cret", "host=h xxxxx"},
		{"key=value no equals", "host=h s3cret", "host=h xxxxx"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		if got := Redact(tt.in); got != tt.want {
			t.Errorf("%s: Redact(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
}

func TestCheckURL_DescribesTheProblemWithoutThePassword(t *testing.T) {
	const password = "Sup3r-s3cret"
	valid := []string{
		"postgres://sortie:" + password + "@db:5432/sortie?sslmode=disable",
		"host=db user=sortie password=" + password + " dbname=sortie",
	}
	for _, u := range valid {
		if err := CheckURL(u); err != nil {
			t.Errorf("CheckURL(%q) = %v, want nil", u, err)
		}
	}
	invalid := []struct {
		in, want string
	}{
		{"", "is empty"},
		{"postgres://sortie:" + password + "@db:port/sortie", "invalid port"},
		{"postgres://sortie:" + password + "%zz@db/sortie", "failed to parse as URL"},
		{"postgres://sortie:" + password + "/x@db:5432/sortie", "invalid port"}, // the / ends the host
		{"host=db password='" + password, "failed to parse as keyword/value"},
		{"host=db password=" + password + " port=many", "invalid port"},
		{"postgres://sortie:" + password + "@db/sortie?pool_max_conns=lots", "pool_max_conns"},
	}
	for _, tt := range invalid {
		err := CheckURL(tt.in)
		if err == nil {
			t.Errorf("CheckURL(%q) = nil, want an error", tt.in)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tt.want) || strings.Contains(msg, password) || strings.Contains(msg, "s3cret") {
			t.Errorf("CheckURL(%q) = %q, want it to say %q and never show the password", tt.in, msg, tt.want)
		}
	}
}

// connString writes a connection string with the given parts, in URL or key=value form,
// the password spelled as the form requires (spell); tail is appended as it is (query
// parameters or more settings).
func connString(user, password, host, tail string, keyValue bool) string {
	if keyValue {
		return "user=" + spell(user, true) + " password=" + spell(password, true) + " host=" + spell(host, true) + " " + tail
	}
	return "postgres://" + url.User(user).String() + ":" + spell(password, false) + "@" + host + "/db" + tail
}

// spell writes a user name or password as a connection string holds it: quoted and
// escaped for key=value, percent-encoded for a URL.
func spell(s string, keyValue bool) string {
	if keyValue {
		return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
	}
	return strings.TrimPrefix(url.UserPassword("", s).String(), ":")
}

// FuzzRedact: whenever pgx reads a password from a connection string, Redact's output
// holds it nowhere (unless the rest of the string happens to spell it too) and, parsed
// again, gives the mask for the password.
func FuzzRedact(f *testing.F) {
	// ParseConfig would otherwise take a password from the environment or a password
	// file when the string has none.
	f.Setenv("PGPASSWORD", "")
	f.Setenv("PGPASSFILE", filepath.Join(f.TempDir(), "none"))
	f.Setenv("PGSERVICEFILE", filepath.Join(f.TempDir(), "none"))
	seeds := []struct {
		user, password, host, tail string
		keyValue                   bool
	}{
		{"sortie", "s3cret", "db:5432", "?sslmode=disable", false},
		{"sortie", "p@ss/w:rd?#%", "db", "", false},
		{"u", "x", "localhost", "?application_name=a@b", false},
		{"sortie", "s3 'cret\\", "db", "sslmode=disable", true},
		{"", "pw", "h", "password=other", true},
		{"u", "pw", "h", "&sslpassword=k", false},
	}
	for _, s := range seeds {
		f.Add(s.user, s.password, s.host, s.tail, s.keyValue)
	}
	f.Fuzz(func(t *testing.T, user, password, host, tail string, keyValue bool) {
		in := connString(user, password, host, tail, keyValue)
		cfg, err := pgxpool.ParseConfig(in)
		if err != nil || password == "" || cfg.ConnConfig.Password != password {
			return // no password, or not the one written: it came from the tail
		}
		out := Redact(in)
		if again, err := pgxpool.ParseConfig(out); err == nil && again.ConnConfig.Password != mask {
			t.Fatalf("Redact(%q) = %q, which parses with password %q, want %q", in, out, again.ConnConfig.Password, mask)
		}
		// The output may hold the password's text only where the input holds it outside
		// the password (ideal: the input with the password masked), or across the edge
		// of a mask (which the NULs below rule out: a password holds no NUL).
		ideal := connString(user, mask, host, tail, keyValue)
		masked := strings.ReplaceAll(out, mask, strings.Repeat("\x00", len(mask)))
		for _, form := range []string{password, spell(password, keyValue)} {
			if !strings.Contains(ideal, form) && strings.Contains(masked, form) {
				t.Fatalf("Redact(%q) = %q, which still holds the password as %q", in, out, form)
			}
		}
	})
}
