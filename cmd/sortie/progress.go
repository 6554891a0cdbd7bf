package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"sortie/internal/orchestrator"
)

// progressView is the live display on a terminal: a short table of running, retrying
// and held issues, redrawn below the log lines. When stderr is not a terminal it is a
// plain pass-through writer and shows nothing.
type progressView struct {
	mu    sync.Mutex
	w     io.Writer
	tty   bool
	lines int // lines of the table currently on screen
	table string
}

func newProgressView(w io.Writer, disabled bool) *progressView {
	v := &progressView{w: w}
	if f, ok := w.(*os.File); ok && !disabled && os.Getenv("TERM") != "dumb" {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			v.tty = true
		}
	}
	return v
}

// Write prints log output above the table.
func (v *progressView) Write(p []byte) (int, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.tty {
		return v.w.Write(p)
	}
	v.clear()
	n, err := v.w.Write(p)
	v.draw()
	return n, err
}

func (v *progressView) clear() {
	if v.lines > 0 {
		fmt.Fprintf(v.w, "\x1b[%dA\x1b[J", v.lines)
		v.lines = 0
	}
}

func (v *progressView) draw() {
	if v.table == "" {
		return
	}
	io.WriteString(v.w, v.table)
	v.lines = strings.Count(v.table, "\n")
}

// start redraws the table twice a second until ctx ends or the returned func is called.
func (v *progressView) start(ctx context.Context, snapshot func(context.Context) (orchestrator.Snapshot, error)) (stop func()) {
	if !v.tty {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			sctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			s, err := snapshot(sctx)
			cancel()
			if err != nil {
				continue
			}
			v.mu.Lock()
			v.clear()
			v.table = renderTable(s)
			v.draw()
			v.mu.Unlock()
		}
	}()
	return func() {
		close(done)
		<-finished
		v.mu.Lock()
		v.clear()
		v.table = ""
		v.mu.Unlock()
	}
}

// renderTable formats a snapshot for the terminal.
func renderTable(s orchestrator.Snapshot) string {
	var b strings.Builder
	fmt.Fprintf(&b, "── sortie: %d running / %d slots · %d retrying · %d held · %s tokens ──\n",
		len(s.Running), s.MaxAgents, len(s.Retrying), len(s.Held), humanInt(s.Totals.TotalTokens))
	for _, r := range s.Running {
		fmt.Fprintf(&b, "  ▶ %-12s %-12s turn %d/%d  %8s tok  %6s  %s\n", r.Identifier, r.State, r.Turn, r.MaxTurns,
			humanInt(r.Tokens.Total), s.GeneratedAt.Sub(r.StartedAt).Round(time.Second), clip(r.LastEvent, 20))
	}
	for _, r := range s.Retrying {
		fmt.Fprintf(&b, "  ↻ %-12s %-12s attempt %d in %s  %s\n", r.Identifier, r.Kind, r.Attempt,
			r.DueAt.Sub(s.GeneratedAt).Round(time.Second), clip(r.Error, 50))
	}
	for _, h := range s.Held {
		fmt.Fprintf(&b, "  ⏸ %-12s %-12s %s\n", h.Identifier, h.Reason, clip(h.Message, 60))
	}
	return b.String()
}

func humanInt(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%.0fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}
