package daemon

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"

	"sortie/internal/config"
	"sortie/internal/workflow/session"
)

// OperatorTokenSuffix names the operator token file, next to the database: the
// credential every API route but /livez and /readyz needs when server.auth_token is not
// set (docs/api.md, "Authentication").
const OperatorTokenSuffix = ".operator-token"

// operatorToken is the token the API and dashboard require: server.auth_token when
// set, otherwise one generated on first start and kept 0600 beside the database
// (<db_path>.operator-token, created and checked as the workflow key is), so that a
// process that can reach the port, an agent included, cannot answer for a human.
func operatorToken(cfg *config.Config) (string, error) {
	return loadOperatorToken(cfg, session.LoadOrCreateKey)
}

// ReadOperatorToken is operatorToken for a client of the daemon (`sortie status`),
// which reads the token file and never writes it: "" when the daemon has not made
// one yet.
func ReadOperatorToken(cfg *config.Config) (string, error) {
	token, err := loadOperatorToken(cfg, session.LoadKey)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return token, err
}

func loadOperatorToken(cfg *config.Config, load func(string) ([]byte, error)) (string, error) {
	if cfg.Server.AuthToken != "" {
		return cfg.Server.AuthToken, nil
	}
	path := cfg.DBPath + OperatorTokenSuffix
	key, err := load(path)
	if err != nil {
		return "", fmt.Errorf("operator token %s: %w", path, err)
	}
	return hex.EncodeToString(key), nil
}

// LoginURL is the link that logs a browser in to the dashboard at base (ending in /),
// with the operator token itself: `sortie status --login-url`.
func LoginURL(base, token string) string {
	return base + "login?token=" + url.QueryEscape(token)
}

// codeLoginURL is the link that logs one browser in, once, with a one-time code
// (server.LoginCode): the one the daemon prints.
func codeLoginURL(base, code string) string {
	return base + "login?code=" + url.QueryEscape(code)
}
