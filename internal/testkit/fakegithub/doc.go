// Package fakegithub is a fake GitHub REST API for tests: an httptest server that keeps
// one repository's issues and pull requests and the code host's view of them (check
// runs, commit statuses, GitHub Actions job logs, reviews and review comments), and
// answers on the paths Sortie uses in GitHub's JSON shapes: bearer auth, per_page/page
// pagination with Link headers, the search endpoint, weak ETags whose conditional hits
// are answered 304 and not charged, and a primary rate limit per resource (core,
// search) that counts down and refuses when spent.
//
// A test changes the repository at runtime, as a person or a CI system on GitHub
// would, with the Server's mutators; they are safe to call while a client polls, and
// every change moves the ETags of the responses that show it (and, where GitHub does,
// the updated_at). The fake owns no adapter logic: it imports nothing of
// Sortie's.
//
// # Routes
//
// Under /repos/{owner}/{repo}:
//
//	GET   /issues                          open issues and pull requests (state=open|closed|all), pages
//	GET   /issues/{n}                      one issue
//	PATCH /issues/{n}                      labels, state, state_reason
//	GET   /issues/{n}/comments             comments, pages
//	POST  /issues/{n}/comments             a comment by the token's account
//	POST  /issues/{n}/labels               {"labels": [...]}: adds those the issue lacks
//	                                       (made in the repository if new); answers all its labels
//	GET   /issues/{n}/parent               the parent issue, 404 when none
//	GET   /issues/{n}/dependencies/blocked_by  the blockers, pages
//	GET   /pulls                           pull requests: state=open|closed|all, head=owner:branch,
//	                                       base, sort=created|updated, direction; pages
//	GET   /pulls/{n}                       one pull request, with merged, mergeable, ...
//	GET   /pulls/{n}/reviews               reviews, oldest first, pages
//	GET   /pulls/{n}/reviews/{id}          one review
//	GET   /pulls/{n}/reviews/{id}/comments the review's comments, pages
//	GET   /pulls/{n}/comments              every review comment, by id (sort, direction, since), pages
//	GET   /commits/{ref}/check-runs        {"total_count", "check_runs"}: filter=latest|all,
//	                                       check_name, status; pages
//	GET   /commits/{ref}/status            the combined status; its statuses paged
//	GET   /commits/{ref}/statuses          every status, newest first, pages
//	GET   /actions/jobs/{job_id}/logs      302 to a signed log URL, valid one minute
//
// and GET /search/issues (q with label:, is:issue, is:open) and GET /user. A {ref} is a
// commit SHA (or a unique prefix of seven or more), a branch (name, heads/name or
// refs/heads/name: the head of a pull request from this repository, or a base), and
// is answered 422 "No commit found for SHA" when it names nothing the fake knows.
//
// The signed log URL (under /_blob/) stands for GitHub's blob storage: it takes no
// token, answers text/plain with Range support, refuses after its expiry (the fake's
// clock) and refuses, and records in LogRedirectAuthLeaks, a request that carries an
// Authorization header: a client must not hand the API token to the storage host. Its
// requests are counted and logged but never charged.
package fakegithub
