package github

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzStripLog feeds arbitrary bytes to the job-log cleaner as a log: it never panics,
// and what it keeps is at most maxLines valid UTF-8 lines without an escape, a carriage
// return or a newline, none blank, none longer than maxCleanLine and its "…".
func FuzzStripLog(f *testing.F) {
	f.Add(ownFile(f, "job_log.txt"), uint8(50))
	for _, s := range []string{
		"\ufeff2026-04-02T08:41:03.1185210Z \x1b[31;1mFAIL\x1b[0m\n##[endgroup]\n",
		"\x1b]8;;https://x\x07link\x1b]8;;\x1b\\\r\n##[error]boom\r\n",
		"\x1b[", "\x1b", "\x1b]unterminated", "##[", "##[]", "[command]", "\r\r\r", "2026-04-02T08:41:03.Z x",
		"a\u009b31mb\xff\xfe\n\n\n", strings.Repeat("x", maxRawLine+10) + "\nshort\n",
	} {
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, data []byte, n uint8) {
		maxLines := int(n)%60 + 1
		lines, _, err := tailLog(bytes.NewReader(data), maxLines, int64(len(data)), false)
		if err != nil {
			t.Fatal(err)
		}
		if len(lines) > maxLines {
			t.Fatalf("%d lines, want at most %d", len(lines), maxLines)
		}
		for _, l := range lines {
			switch {
			case strings.ContainsAny(l, "\x1b\r\n"):
				t.Fatalf("line %q keeps an escape, a carriage return or a newline", l)
			case !utf8.ValidString(l):
				t.Fatalf("line %q is not valid UTF-8", l)
			case strings.TrimSpace(l) == "":
				t.Fatalf("blank line kept")
			case len(l) > maxCleanLine+len("…"):
				t.Fatalf("line of %d bytes, want at most %d", len(l), maxCleanLine+len("…"))
			}
		}
		joined := strings.Join(lines, "\n")
		if strings.Count(joined, "\n")+1 > maxLines && joined != "" {
			t.Fatalf("excerpt has more than %d lines", maxLines)
		}
	})
}

// FuzzDecodeCheckRuns feeds arbitrary bytes to the check-run and combined-status
// decoders: they never panic, and every check they return has a kind and one of the
// three states.
func FuzzDecodeCheckRuns(f *testing.F) {
	f.Add(ownFile(f, "check_runs_mixed.json"))
	f.Add(ownFile(f, "combined_status.json"))
	for _, s := range []string{
		`{"total_count": 1, "check_runs": [{"id": 1, "status": "completed", "conclusion": null, "app": null}]}`,
		`{"check_runs": null, "statuses": null}`,
		`{"statuses": [{"state": "error", "target_url": null}], "total_count": -5}`,
		`{"check_runs": [{"status": "COMPLETED", "conclusion": "STALE"}]}`,
		`[]`, `null`, `{"check_runs": {}}`, ``,
	} {
		f.Add([]byte(s))
	}
	valid := func(t *testing.T, cs []Check, kind string) {
		for _, c := range cs {
			if c.Kind != kind || (c.State != CheckPassing && c.State != CheckPending && c.State != CheckFailing) {
				t.Fatalf("check %+v: want kind %s and a known state", c, kind)
			}
		}
		if st := aggregate(cs); st != CheckPassing && st != CheckPending && st != CheckFailing {
			t.Fatalf("aggregate = %q", st)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if runs, err := decodeCheckRuns(data); err == nil {
			valid(t, runs, KindCheckRun)
			sortChecks(runs)
		}
		if sts, _, err := decodeCombinedStatus(data); err == nil {
			valid(t, sts, KindStatus)
		}
	})
}

// FuzzDecodeReviews feeds arbitrary bytes to the review and review-comment decoders
// and to the rules that pick what counts: they never panic, only CHANGES_REQUESTED
// reviews by humans count, and a comment's lines are a range within 0…line.
func FuzzDecodeReviews(f *testing.F) {
	f.Add(ownFile(f, "reviews.json"), ownFile(f, "review_comments_mkoval.json"))
	f.Add([]byte(`[{"id": 1, "user": null, "state": "CHANGES_REQUESTED", "submitted_at": "x"}, {"id": 2, "user": {"login": "a[bot]"}, "state": "changes_requested"}]`),
		[]byte(`[{"id": 1, "position": null, "line": -4, "start_line": 9, "subject_type": "FILE"}, {"id": 2, "line": 3, "start_line": -1, "position": 0}]`))
	f.Add([]byte(`null`), []byte(`{}`))
	f.Fuzz(func(t *testing.T, reviews, comments []byte) {
		if list, err := decodeReviews(reviews); err == nil {
			for _, rv := range standingChangeRequests(list) {
				if !human(rv.User) || !strings.EqualFold(rv.State, "CHANGES_REQUESTED") {
					t.Fatalf("review %+v counts", rv)
				}
			}
		}
		if list, err := decodeReviewComments(comments); err == nil {
			for i := range list {
				_ = outdated(&list[i])
				from, to := lines(list[i].StartLine, list[i].Line)
				if from < 0 || from > to {
					t.Fatalf("lines %d-%d from start_line %v line %v", from, to, list[i].StartLine, list[i].Line)
				}
			}
		}
	})
}
