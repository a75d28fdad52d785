package hub

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"time"
)

// NewID returns prefix_ followed by 32 hex digits: 48 bits of milliseconds
// then 80 random bits (the UUIDv7 layout), so ids sort by creation time,
// which keeps id-ordered pages stable and index inserts local.
func NewID(prefix string, now time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(now.UnixMilli())<<16)
	rand.Read(b[6:])
	return prefix + "_" + hex.EncodeToString(b[:])
}
