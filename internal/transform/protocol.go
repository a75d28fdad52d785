package transform

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

// The protocol between the hub and a worker process: on the worker's fd 3
// the hub writes requests, on its fd 4 the worker writes results (never on
// stdout or stderr, so nothing else the process prints can desync them).
// Each message is a frame, a 4-byte big-endian length and that many bytes.
// A request is the budget in microseconds (4 bytes) and nine strings, each
// length-prefixed: the program's source and the input's fields. The worker
// answers a frame of one byte, kindStarted, when it has read the request
// and starts the program, then the result: one kind byte and its text, the
// body or an error's message. The hub's deadline, the budget and its
// allowance, runs from the first to the start of the second, so that
// moving a large event or body through the pipes is never counted as the
// program's time.

// Kinds of result.
const (
	kindJSON     byte = iota + 1 // body, application/json
	kindText                     // body, text/plain
	kindError                    // the program's own error, its message
	kindTimeout                  // ErrTimeout
	kindTooLarge                 // ErrTooLarge
	kindNoOutput                 // ErrNoOutput
	kindMany                     // ErrManyOutputs
	kindMemory                   // ErrMemory
	kindReady                    // the worker's first frame: its limits, as text
	kindStarted                  // the request is read, the program starts
)

// maxRequest and maxResult bound what either side reads: a request holds a
// program (hub.MaxTransformBytes) and an event (the ingest record limit,
// 1 MiB by default, or a preview's body; a larger event is refused before
// it is sent), a result at most hub.MaxTransformOutput and a kind byte; an
// error's message is clipped far below that.
const (
	maxRequest = 16 << 20
	maxResult  = 1<<20 + 1
)

var errFrame = errors.New("frame larger than its limit")

func writeFrame(w io.Writer, b []byte) error {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(b)))
	if _, err := w.Write(n[:]); err != nil {
		return err
	}
	_, err := w.Write(b)
	return err
}

// readFrame reads one frame of at most max bytes; a longer one is an error
// before anything of it is held.
func readFrame(r io.Reader, max int) ([]byte, error) {
	return readFrameThen(r, max, nil)
}

// readFrameThen is readFrame calling then, if not nil, once the frame's
// length has arrived.
func readFrameThen(r io.Reader, max int, then func()) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	if then != nil {
		then()
	}
	size := binary.BigEndian.Uint32(n[:])
	if int64(size) > int64(max) {
		return nil, fmt.Errorf("%w: %d bytes", errFrame, size)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r, b); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return b, nil
}

type request struct {
	src    string
	budget time.Duration
	in     Input
}

func (q request) encode() []byte {
	fields := []string{q.src, q.in.ID, q.in.Type, q.in.Source, q.in.Subject, q.in.Time, q.in.TenantID,
		q.in.DataContentType, string(q.in.Data)}
	n := 4
	for _, f := range fields {
		n += 4 + len(f)
	}
	b := make([]byte, 4, n)
	binary.BigEndian.PutUint32(b, uint32(q.budget/time.Microsecond))
	for _, f := range fields {
		b = binary.BigEndian.AppendUint32(b, uint32(len(f)))
		b = append(b, f...)
	}
	return b
}

func decodeRequest(b []byte) (request, error) {
	if len(b) < 4 {
		return request{}, errors.New("short request")
	}
	q := request{budget: time.Duration(binary.BigEndian.Uint32(b)) * time.Microsecond}
	b = b[4:]
	// The data is kept where it is, not copied: the worker's memory is the
	// program's.
	var fields [9][]byte
	for i := range fields {
		if len(b) < 4 {
			return request{}, errors.New("short request")
		}
		n := binary.BigEndian.Uint32(b)
		b = b[4:]
		if uint64(n) > uint64(len(b)) {
			return request{}, errors.New("short request")
		}
		fields[i], b = b[:n:n], b[n:]
	}
	q.src = string(fields[0])
	q.in = Input{ID: string(fields[1]), Type: string(fields[2]), Source: string(fields[3]), Subject: string(fields[4]),
		Time: string(fields[5]), TenantID: string(fields[6]), DataContentType: string(fields[7]), Data: fields[8]}
	return q, nil
}

func encodeResult(res Result, err error) []byte {
	if err != nil {
		kind := kindError
		switch {
		case errors.Is(err, ErrTimeout):
			kind = kindTimeout
		case errors.Is(err, ErrTooLarge):
			kind = kindTooLarge
		case errors.Is(err, ErrNoOutput):
			kind = kindNoOutput
		case errors.Is(err, ErrManyOutputs):
			kind = kindMany
		case errors.Is(err, ErrMemory):
			kind = kindMemory
		}
		return append([]byte{kind}, err.Error()...)
	}
	kind := kindJSON
	if res.ContentType == ContentTypeText {
		kind = kindText
	}
	return append([]byte{kind}, res.Body...)
}

func decodeResult(b []byte) (Result, error) {
	if len(b) == 0 {
		return Result{}, errors.New("empty result")
	}
	switch b[0] {
	case kindJSON:
		return Result{Body: b[1:], ContentType: ContentTypeJSON}, nil
	case kindText:
		return Result{Body: b[1:], ContentType: ContentTypeText}, nil
	case kindError:
		return Result{}, errors.New(string(b[1:]))
	case kindTimeout:
		return Result{}, ErrTimeout
	case kindTooLarge:
		return Result{}, ErrTooLarge
	case kindNoOutput:
		return Result{}, ErrNoOutput
	case kindMany:
		return Result{}, ErrManyOutputs
	case kindMemory:
		return Result{}, ErrMemory
	}
	return Result{}, fmt.Errorf("result of unknown kind %d", b[0])
}
