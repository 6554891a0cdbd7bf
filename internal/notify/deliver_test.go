package notify

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestBackoffDelay_DoublesFromHalfASecondAndIsCapped(t *testing.T) {
	tests := []struct {
		attempt int
		want    time.Duration
	}{
		{0, 500 * time.Millisecond},
		{1, 500 * time.Millisecond},
		{2, time.Second},
		{3, 2 * time.Second},
		{7, 30 * time.Second},
		{10, 30 * time.Second},
		{1000, 30 * time.Second},
	}
	for _, tt := range tests {
		if got := backoffDelay(tt.attempt); got != tt.want {
			t.Errorf("backoffDelay(%d) = %v, want %v", tt.attempt, got, tt.want)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		header string
		want   time.Duration
		ok     bool
	}{
		{"", 0, false},
		{"0", 0, true},
		{" 12 ", 12 * time.Second, true},
		{"31", maxRetryAfter, true},
		{"99999999999999999999999", maxRetryAfter, true},
		{"1.5", 0, false},
		{"-3", 0, false},
		{"later", 0, false},
		{now.Add(10 * time.Second).Format(http.TimeFormat), 10 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
		{now.Add(time.Hour).Format(http.TimeFormat), maxRetryAfter, true},
	}
	for _, tt := range tests {
		got, ok := parseRetryAfter(tt.header, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseRetryAfter(%q) = %v, %v; want %v, %v", tt.header, got, ok, tt.want, tt.ok)
		}
	}
}

func TestQuoteBody_OneShortLineOfText(t *testing.T) {
	tests := []struct{ body, want string }{
		{"", ""},
		{"invalid_token\n", "invalid_token"},
		{"line one\r\n\tline\x00two", "line one line two"},
		{"<!DOCTYPE html><p>err</p>", ""},
		{strings.Repeat("x", 500), strings.Repeat("x", maxQuotedBody) + "…"},
		{strings.Repeat("é", 150), strings.Repeat("é", maxQuotedBody/2) + "…"},
		{"bad \xff bytes", "bad bytes"},
	}
	for _, tt := range tests {
		if got := quoteBody(strings.NewReader(tt.body)); got != tt.want {
			t.Errorf("quoteBody(%q) = %q, want %q", tt.body, got, tt.want)
		}
	}
}

func TestTruncate_CutsOnARuneBoundary(t *testing.T) {
	s := "ab" + strings.Repeat("日", 10)
	for max := 0; max <= len(s)+1; max++ {
		got := truncate(s, max)
		if len(s) <= max {
			if got != s {
				t.Errorf("truncate(s, %d) = %q, want s unchanged", max, got)
			}
			continue
		}
		if !strings.HasSuffix(got, truncatedMark) || !strings.HasPrefix(s, strings.TrimSuffix(got, truncatedMark)) {
			t.Errorf("truncate(s, %d) = %q, want a prefix of s and the mark", max, got)
		}
		if max >= len(truncatedMark) && len(got) > max {
			t.Errorf("truncate(s, %d) is %d bytes", max, len(got))
		}
	}
}

func TestSleepContext_ReturnsWhenContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := sleepContext(ctx, time.Hour); err != context.Canceled {
		t.Errorf("sleepContext(cancelled, 1h) = %v, want context.Canceled", err)
	}
	if err := sleepContext(context.Background(), 0); err != nil {
		t.Errorf("sleepContext(0) = %v, want nil", err)
	}
}
