package checkpoint

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"sortie/internal/config"
	"sortie/internal/store"
	"sortie/internal/tracker"
)

// RefusedAnswer is a "/sortie choose" tracker comment that did not answer a checkpoint
// because its author may not (AnswerRefusal).
type RefusedAnswer struct {
	Author string    `json:"author"`
	Option string    `json:"option"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"` // the comment's time, or when it was read
}

// maxRefused bounds the refused answers kept per issue.
const maxRefused = 20

// MaxCommentReads bounds the issues whose comments one ReadAnswers reads: one tracker
// request each, every poll.
const MaxCommentReads = 20

// RefusedAnswers returns the newest tracker answers refused for issueID, oldest first;
// none for a nil Desk.
func (d *Desk) RefusedAnswers(issueID string) []RefusedAnswer {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.refused[issueID])
}

// refuse records a refused tracker answer.
func (d *Desk) refuse(issueID string, ra RefusedAnswer) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.refused == nil {
		d.refused = map[string][]RefusedAnswer{}
	}
	list := append(d.refused[issueID], ra)
	if len(list) > maxRefused {
		list = list[len(list)-maxRefused:]
	}
	d.refused[issueID] = list
}

// commentSeen marks a comment read and reports whether it had been.
func (d *Desk) commentSeen(issueID, commentID string) bool {
	key := issueID + "\x00" + commentID
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.seen[key] {
		return true
	}
	d.seen[key] = true
	return false
}

// chooseRE matches a tracker answer: a comment whose first line is
// "/sortie choose <option>".
var chooseRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*/sortie\s+choose\s+(\S+)\s*$`) })

// parseChoose returns the option of a "/sortie choose" comment.
func parseChoose(body string) (string, bool) {
	first, _, _ := strings.Cut(strings.TrimLeft(body, " \t\r\n"), "\n")
	m := chooseRE().FindStringSubmatch(strings.TrimRight(first, "\r"))
	if m == nil {
		return "", false
	}
	return strings.Trim(m[1], "`*_\"'"), true
}

// batch picks the issues, of those held at a checkpoint (awaiting), whose tracker
// comments this read covers: at most MaxCommentReads, going round them in id order from
// where the previous read stopped. With more of them than one read covers, each is still
// read every few polls and none starves.
func (d *Desk) batch(awaiting []string) []string {
	ids := slices.Clone(awaiting)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	if len(ids) <= MaxCommentReads {
		return ids
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	start, _ := slices.BinarySearch(ids, d.readAfter+"\x00") // the first id after the cursor
	out := make([]string, 0, MaxCommentReads)
	for i := range MaxCommentReads {
		out = append(out, ids[(start+i)%len(ids)])
	}
	d.readAfter = out[len(out)-1]
	return out
}

// ReadAnswers reads, through trk (the tracker in force), the comments of issues held
// awaiting an answer (awaiting: their ids; at most MaxCommentReads of them are read per
// call, in turn) and records the first "/sortie choose" of each that came after its
// checkpoint and whose author may answer (AnswerRefusal; refused ones are listed in
// RefusedAnswers). An option the checkpoint does not have gets a reply comment. It
// makes tracker requests: call it off the orchestrator's loop (the tick goroutine).
func (d *Desk) ReadAnswers(ctx context.Context, trk tracker.Tracker, awaiting []string) {
	ids := d.batch(awaiting)
	if len(ids) == 0 {
		return
	}
	self, err := trackerSelf(ctx, trk)
	if err != nil {
		// Fail closed: a comment of Sortie's own account must never pass for a human's
		// answer, so none is read until the account is known. The next tick asks again.
		d.log.Warn("checkpoint answers in tracker comments wait until Sortie knows the tracker account it writes as",
			"error", err)
		return
	}
	for _, id := range ids {
		pending := d.rows(id)
		if len(pending) == 0 {
			continue
		}
		comments, err := trk.FetchIssueComments(ctx, id)
		if err != nil {
			d.log.Warn("reading tracker comments for checkpoint answers failed", "issue_identifier", pending[0].Identifier, "error", err)
			continue
		}
		asked := false // a checkpoint comment of Sortie's came before
		for _, cm := range comments {
			if strings.HasPrefix(cm.Body, CommentPrefix) {
				asked = true
			}
			option, ok := parseChoose(cm.Body)
			if !ok || d.commentSeen(id, cm.ID) {
				continue
			}
			at, err := time.Parse(time.RFC3339, cm.CreatedAt)
			if why := AnswerRefusal(d.opts.Config(), self, cm); why != "" {
				d.log.Warn("a tracker comment's checkpoint answer was refused", "issue_identifier", pending[0].Identifier,
					"author", cm.Author, "option", option, "reason", why)
				when := at
				if err != nil {
					when = d.clk.Now()
				}
				d.refuse(id, RefusedAnswer{Author: cm.Author, Option: option, Reason: why, At: when})
				continue
			}
			// A comment counts when it came after the checkpoint: by its time, or,
			// without one (a hand-edited issues file), by coming after Sortie's question.
			for _, cp := range pending {
				if cp.Answered() || (err == nil && at.Before(cp.IssuedAt.Truncate(time.Second))) || (err != nil && !asked) {
					continue
				}
				_, aerr := d.answer(ctx, cp, option, cm.Author, store.AnswerTracker)
				var oe *OptionError
				if errors.As(aerr, &oe) {
					// Posted here, on the caller's goroutine, not through the loop: the
					// loop may be shutting down and waiting for its background work.
					reply := fmt.Sprintf("Sortie: %q is not an option of checkpoint %s. Choose one of: %s (reply /sortie choose <option>).",
						option, cp.CheckpointID, strings.Join(oe.Valid, ", "))
					if err := trk.CommentIssue(ctx, id, reply); err != nil {
						d.log.Warn("replying to an invalid checkpoint answer failed", "issue_identifier", cp.Identifier, "error", err)
					}
				} else if aerr != nil {
					d.log.Warn("recording a tracker answer failed", "issue_identifier", cp.Identifier, "error", aerr)
				}
				break
			}
		}
	}
}

// trackerSelf is the account trk writes as, or the zero Identity when the tracker
// cannot say (the file tracker, whose comments never answer).
func trackerSelf(ctx context.Context, trk tracker.Tracker) (tracker.Identity, error) {
	acc, ok := tracker.As[tracker.Account](trk)
	if !ok {
		return tracker.Identity{}, nil
	}
	return acc.Self(ctx)
}

// answererAssociations are the GitHub author associations whose comments answer
// checkpoints when workflows.answerers is not set: people with a say in the repository.
var answererAssociations = []string{"OWNER", "MEMBER", "COLLABORATOR"}

// AnswerRefusal says why a "/sortie choose" comment may not answer a checkpoint, or ""
// when it may. A checkpoint is a human's decision, and on a public repository anyone
// can comment, the agent's own prompt injector included: with the file tracker,
// comments never answer (the dashboard and the API do); a comment by self, the account
// Sortie writes as, or by any app's bot account never does; with workflows.answerers,
// only those logins or emails do; on GitHub without it, only the repository's owners,
// members and collaborators. The agent itself cannot comment: tracker_api has no such
// operation, and the agent holds no tracker credential.
func AnswerRefusal(cfg *config.Config, self tracker.Identity, cm tracker.Comment) string {
	switch {
	case !CommentsAnswer(cfg):
		return "with the file tracker, checkpoints are answered on the dashboard or through the API only"
	case self.Wrote(cm):
		return fmt.Sprintf("the comment is by %s, the tracker account Sortie itself writes as (tracker.api_key's)", self)
	case cm.AuthorBot:
		return fmt.Sprintf("%q is an app's bot account, not a person", cm.Author)
	case len(cfg.Workflows.Answerers) > 0:
		if !slices.ContainsFunc(cfg.Workflows.Answerers, func(a string) bool {
			// By login or e-mail, never by the displayed name, which on Jira anyone
			// can set to an answerer's login or address.
			return (cm.AuthorLogin != "" && strings.EqualFold(a, cm.AuthorLogin)) ||
				(cm.AuthorEmail != "" && strings.EqualFold(a, cm.AuthorEmail))
		}) {
			return fmt.Sprintf("%q is not in workflows.answerers", cm.Author)
		}
	case cfg.Tracker.Kind == "github":
		if !slices.Contains(answererAssociations, strings.ToUpper(cm.AuthorAssociation)) {
			return fmt.Sprintf("%q is %s on the repository, not OWNER, MEMBER or COLLABORATOR (list who may answer in workflows.answerers)",
				cm.Author, cmp.Or(cm.AuthorAssociation, "NONE"))
		}
	}
	return ""
}
