package fakemodel

import "net/http"

// finalError is the writer of a Reply with NoRetry: whatever X-Should-Retry the error
// would carry, it goes out as false.
type finalError struct{ http.ResponseWriter }

func (f finalError) WriteHeader(code int) {
	f.Header().Set("X-Should-Retry", "false")
	f.ResponseWriter.WriteHeader(code)
}
