package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseDotenv(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want map[string]string
	}{
		{"plain", "A=1\nB=two words\n", map[string]string{"A": "1", "B": "two words"}},
		{"blank lines and comments", "\n# c\n  # indented\nA=1\n\n", map[string]string{"A": "1"}},
		{"spaces around key and value", "  A  =  1  \n", map[string]string{"A": "1"}},
		{"double quotes stripped, no escapes", `A="x \n y"`, map[string]string{"A": `x \n y`}},
		{"single quotes stripped", "A='a # not a comment'", map[string]string{"A": "a # not a comment"}},
		{"comment after quoted value", `A="v" # note`, map[string]string{"A": "v"}},
		{"inline comment after unquoted value", "A=v # note", map[string]string{"A": "v"}},
		{"hash without space is part of the value", "A=abc#def", map[string]string{"A": "abc#def"}},
		{"equals in value", "A=b=c", map[string]string{"A": "b=c"}},
		{"empty value", "A=", map[string]string{"A": ""}},
		{"export prefix", "export A=1", map[string]string{"A": "1"}},
		{"last assignment wins", "A=1\nA=2", map[string]string{"A": "2"}},
		{"CRLF", "A=1\r\nB=2\r\n", map[string]string{"A": "1", "B": "2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, problems := parseDotenv(".env", []byte(tt.in))
			if len(problems) > 0 {
				t.Fatalf("unexpected problems: %v", problems)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseDotenv_ErrorsNameTheLine(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"missing equals", "A=1\n\nJUSTAKEY\n", []string{"config: dotenv /e/.env:3: missing '=' in line"}},
		{"invalid key", "1A=x\nA-B=y\n", []string{
			`config: dotenv /e/.env:1: invalid key "1A": keys are letters, digits and _ and do not start with a digit`,
			`config: dotenv /e/.env:2: invalid key "A-B": keys are letters, digits and _ and do not start with a digit`,
		}},
		{"empty key", "=x\n", []string{`config: dotenv /e/.env:1: invalid key "": keys are letters, digits and _ and do not start with a digit`}},
		{"unterminated quote", "A=1\nB=\"open\n", []string{"config: dotenv /e/.env:2: unterminated quoted value"}},
		{"text after quote", "A='x' y\n", []string{"config: dotenv /e/.env:1: unexpected text after the closing quote"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, problems := parseDotenv("/e/.env", []byte(tt.in))
			var got []string
			for _, p := range problems {
				if p.Severity != SeverityError {
					t.Errorf("severity = %q, want error", p.Severity)
				}
				got = append(got, p.String())
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("problems\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestParseDotenv_ErrorsNeverQuoteValues(t *testing.T) {
	_, problems := parseDotenv("/e/.env", []byte("SORTIE_TRACKER_API_KEY=\"supersecret\n"))
	for _, p := range problems {
		if strings.Contains(p.Message, "supersecret") {
			t.Errorf("problem leaks the value: %s", p)
		}
	}
}
