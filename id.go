package hub

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"sync"
	"time"
)

var idState struct {
	sync.Mutex
	last [16]byte
}

// NewID returns prefix_ followed by 32 hex digits: 48 bits of milliseconds
// then 80 random bits (the UUIDv7 layout), so ids sort by creation time,
// which keeps id-ordered pages stable and index inserts local. Within one
// process ids are strictly increasing: in the same millisecond (or if the
// clock steps back) the previous id is incremented instead.
func NewID(prefix string, now time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(now.UnixMilli())<<16)
	rand.Read(b[6:])
	idState.Lock()
	if string(b[:6]) <= string(idState.last[:6]) {
		b = idState.last
		for i := 15; i >= 6; i-- { // add one to the 80-bit tail
			b[i]++
			if b[i] != 0 {
				break
			}
		}
	}
	idState.last = b
	idState.Unlock()
	return prefix + "_" + hex.EncodeToString(b[:])
}

// IDPrefixAt is the lowest id NewID(prefix, t) can return: ids made at t or
// later sort at or above it, those made earlier below it.
func IDPrefixAt(prefix string, t time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(t.UnixMilli())<<16)
	return prefix + "_" + hex.EncodeToString(b[:])
}
