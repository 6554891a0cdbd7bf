package postgres

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// mask replaces a password wherever Redact finds one.
const mask = "xxxxx"

// Redact returns the connection string with every password in it replaced by xxxxx, for
// messages and logs. It takes both forms pgx does: a URL
// (postgres://user:password@host:5432/db?sslmode=require, where the password may also be
// a password= or sslpassword= query parameter) and key=value settings
// ("host=db user=sortie password='s3 cret'"). It never fails: on input it cannot parse
// it hides more than the password rather than risk showing part of one.
func Redact(url string) string {
	out, _ := redact(url)
	return out
}

// CheckURL reports whether url is a connection string Open can use, without connecting:
// it must be non-empty and parse as pgx parses it. The error names the string with its
// password redacted and says what is wrong; it never quotes pgx's own error, which may
// hold the raw string.
func CheckURL(url string) error {
	_, err := parseURL(url)
	return err
}

// parseURL is CheckURL returning the pool configuration.
func parseURL(url string) (*pgxpool.Config, error) {
	if strings.TrimSpace(url) == "" {
		return nil, errors.New("store: the PostgreSQL connection URL is empty " +
			"(want e.g. postgres://sortie:password@db.example:5432/sortie?sslmode=verify-full)")
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("store: PostgreSQL connection URL %s: %s", Redact(url), describeParseError(err, url))
	}
	return cfg, nil
}

// describeParseError says what pgx found wrong with url without quoting its error,
// which may hold the raw string: only pgx's description of the problem is kept, with
// any password in it replaced. The error's cause (a url.Error, a strconv error, …) is
// dropped: it quotes pieces of the input, which in a mistyped URL may be pieces of the
// password.
func describeParseError(err error, url string) string {
	const generic = "it is neither a valid postgres:// URL nor key=value settings"
	var pce *pgconn.ParseConfigError
	if !errors.As(err, &pce) {
		// pgxpool's own settings (pool_max_conns=…): its messages quote only those values.
		return scrub(err.Error(), url)
	}
	// Error formats "cannot parse `<redacted string>`: <description> (<cause>)"; render
	// it without the string, then cut the cause.
	bare := *pce
	bare.ConnString = ""
	msg, ok := strings.CutPrefix(bare.Error(), "cannot parse ``: ")
	if !ok {
		return generic
	}
	if cause := errors.Unwrap(pce); cause != nil {
		msg = strings.TrimSuffix(msg, " ("+cause.Error()+")")
	}
	msg = scrub(msg, url)
	if strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://") {
		msg += " (characters such as @ : / ? # % in a password or user name must be percent-encoded, e.g. %40 for @)"
	} else {
		msg += " (key=value settings are separated by spaces; quote a value holding spaces or quotes in '…', with \\' and \\\\ inside)"
	}
	return msg
}

// scrub replaces in msg every password redact finds in url, raw and decoded.
func scrub(msg, url string) string {
	_, secrets := redact(url)
	for _, s := range secrets {
		for _, form := range []string{s, decodeURL(s), unescapeKeywordValue(s)} {
			if form != "" {
				msg = strings.ReplaceAll(msg, form, mask)
			}
		}
	}
	return msg
}

// redact is Redact returning also the raw text of every password it replaced.
func redact(s string) (string, []string) {
	if isURL(s) {
		return redactURL(s)
	}
	return redactKeywordValue(s)
}

// isURL reports whether s is meant as a URL: a scheme (no = or space in it) before
// "://". pgx itself takes only postgres:// and postgresql://; any other scheme is then a
// mistake, but its password is still a password.
func isURL(s string) bool {
	scheme, _, ok := strings.Cut(s, "://")
	return ok && !strings.ContainsAny(scheme, "= \t\n\r\v\f")
}

// redactURL masks the password of the userinfo and the values of password-like query
// parameters, following pgx's parser (pgconn parseURLSettings): the userinfo ends at the
// first '@' unless a '/' comes first, and the password is what follows its first ':'.
// An '@' left after that means the URL is ambiguous: a password holding an unencoded @,
// / or ? strands its tail in the host, the path or the query (user:pa/ss@host). Then
// everything up to the last '@' is masked too.
func redactURL(s string) (string, []string) {
	var b strings.Builder
	var secrets []string
	scheme, p, _ := strings.Cut(s, "://")
	b.WriteString(scheme + "://")

	if i := strings.IndexAny(p, "@/"); i >= 0 && p[i] == '@' {
		user, password, hasPassword := strings.Cut(p[:i], ":")
		b.WriteString(user)
		if hasPassword && password != "" {
			b.WriteString(":" + mask)
			secrets = append(secrets, password)
		} else if hasPassword {
			b.WriteByte(':')
		}
		b.WriteByte('@')
		p = p[i+1:]
	}
	if i := strings.LastIndexByte(p, '@'); i >= 0 {
		secrets = append(secrets, p[:i])
		b.WriteString(mask)
		p = p[i:]
	}

	path, query, hasQuery := strings.Cut(p, "?")
	b.WriteString(path)
	if !hasQuery {
		return b.String(), secrets
	}
	b.WriteByte('?')
	for i, pair := range strings.Split(query, "&") {
		if i > 0 {
			b.WriteByte('&')
		}
		key, value, hasValue := strings.Cut(pair, "=")
		if hasValue && value != "" && isPasswordKey(decodeURL(key)) {
			b.WriteString(key + "=" + mask)
			secrets = append(secrets, value)
			continue
		}
		b.WriteString(pair)
	}
	return b.String(), secrets
}

// redactKeywordValue masks the values of password-like keys of key=value settings,
// tokenised as pgx does (pgconn parseKeywordValueSettings): a value is quoted in '…'
// with backslash escapes, or runs to the next white space. From a token it cannot read
// on, the rest of the string is masked: there the boundaries of a value are unknown.
func redactKeywordValue(s string) (string, []string) {
	const space = " \t\n\r\v\f"
	var b strings.Builder
	var secrets []string
	rest := s
	for {
		trimmed := strings.TrimLeft(rest, space)
		b.WriteString(rest[:len(rest)-len(trimmed)])
		rest = trimmed
		if rest == "" {
			return b.String(), secrets
		}
		eq := strings.IndexByte(rest, '=')
		if eq < 0 || strings.ContainsAny(strings.Trim(rest[:eq], space), space) || strings.Trim(rest[:eq], space) == "" {
			secrets = append(secrets, rest)
			b.WriteString(mask)
			return b.String(), secrets
		}
		key := strings.Trim(rest[:eq], space)
		after := rest[eq+1:]
		value := strings.TrimLeft(after, space)
		end, ok := valueEnd(value)
		if !ok {
			secrets = append(secrets, rest)
			b.WriteString(mask)
			return b.String(), secrets
		}
		b.WriteString(rest[:eq+1] + after[:len(after)-len(value)])
		if v := value[:end]; v != "" && v != "''" && isPasswordKey(key) {
			secrets = append(secrets, value[:end])
			b.WriteString(mask)
		} else {
			b.WriteString(value[:end])
		}
		rest = value[end:]
	}
}

// valueEnd returns the length of the value at the start of s, quotes included; ok is
// false for an unterminated quoted value.
func valueEnd(s string) (n int, ok bool) {
	if s == "" {
		return 0, true
	}
	if s[0] != '\'' {
		for i := 0; i < len(s); i++ {
			switch {
			case strings.IndexByte(" \t\n\r\v\f", s[i]) >= 0:
				return i, true
			case s[i] == '\\':
				i++
			}
		}
		return len(s), true
	}
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\'':
			return i + 1, true
		case '\\':
			i++
		}
	}
	return 0, false
}

// isPasswordKey reports whether a connection setting holds a secret: password and
// sslpassword, in any spelling that might reach pgx (it is generous: a key merely
// containing "password" counts).
func isPasswordKey(key string) bool {
	return strings.Contains(strings.ToLower(key), "password")
}

// decodeURL percent-decodes s as pgx decodes URL parts, leaving it as it is when it is
// not valid.
func decodeURL(s string) string {
	d, err := url.PathUnescape(s)
	if err != nil {
		return s
	}
	return d
}

// unescapeKeywordValue undoes the quoting of a key=value value, for scrub.
func unescapeKeywordValue(s string) string {
	s = strings.TrimSuffix(strings.TrimPrefix(s, "'"), "'")
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
