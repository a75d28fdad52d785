package consumer

import "net/http"

// statusRecorder remembers the status the handler answered, to decide
// between Commit and Release.
type statusRecorder struct {
	http.ResponseWriter
	status int // the first final (>= 200) status; 0 until one is written
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 && code >= 200 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Flush keeps streaming handlers working: it sends the headers, so 200
// when none was written.
func (s *statusRecorder) Flush() {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	_ = http.NewResponseController(s.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// succeeded reports a 2xx answer; a handler that wrote nothing gets 200
// from net/http.
func (s *statusRecorder) succeeded() bool {
	return s.status == 0 || s.status >= 200 && s.status <= 299
}
