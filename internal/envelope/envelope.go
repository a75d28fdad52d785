// Package envelope encrypts secrets at rest: each value gets its own random
// data key (AES-256-GCM), and the data key is wrapped by the key-encryption
// key (STREAMING_HUB_KEK). The KEK's id travels in every blob, so blobs
// sealed under an older KEK still open while it is listed as previous, and
// can be rewrapped under the current one.
package envelope

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
)

const (
	version  = 1
	idLen    = 8
	nonceLen = 12
	dekLen   = 32
	// header: version, KEK id, nonce + wrapped data key, data nonce
	headerLen = 1 + idLen + nonceLen + dekLen + 16 + nonceLen
)

// ErrUnknownKey means a blob was sealed under a KEK this keyring lacks.
var ErrUnknownKey = errors.New("envelope: sealed under an unknown key-encryption key")

// Keyring holds the current KEK and older ones still accepted for opening.
type Keyring struct {
	current kek
	byID    map[string]kek
}

type kek struct {
	id   [idLen]byte
	aead cipher.AEAD
}

// NewKeyring derives AES-256 keys from raw KEKs (each at least 32 bytes).
func NewKeyring(current []byte, previous ...[]byte) (*Keyring, error) {
	k := &Keyring{byID: make(map[string]kek)}
	for i, raw := range append([][]byte{current}, previous...) {
		if len(raw) < 32 {
			return nil, fmt.Errorf("envelope: key-encryption key must be at least 32 bytes")
		}
		key, err := hkdf.Key(sha256.New, raw, nil, "streaming-hub kek v1", 32)
		if err != nil {
			return nil, err
		}
		idBytes, err := hkdf.Key(sha256.New, raw, nil, "streaming-hub kek id v1", idLen)
		if err != nil {
			return nil, err
		}
		aead, err := newGCM(key)
		if err != nil {
			return nil, err
		}
		var e kek
		copy(e.id[:], idBytes)
		e.aead = aead
		if i == 0 {
			k.current = e
		}
		k.byID[string(e.id[:])] = e
	}
	return k, nil
}

// KeyID names the current KEK (hex), for logs and rotation reports.
func (k *Keyring) KeyID() string { return hex.EncodeToString(k.current.id[:]) }

// Seal encrypts plaintext under a fresh data key. aad binds the blob to its
// place (e.g. "subscription/<id>"): a blob copied to another row won't open.
func (k *Keyring) Seal(plaintext, aad []byte) ([]byte, error) {
	dek := make([]byte, dekLen)
	rand.Read(dek)
	data, err := newGCM(dek)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, headerLen+len(plaintext)+16)
	out = append(out, version)
	out = append(out, k.current.id[:]...)
	wrapNonce := make([]byte, nonceLen)
	rand.Read(wrapNonce)
	out = append(out, wrapNonce...)
	out = k.current.aead.Seal(out, wrapNonce, dek, out[:1+idLen])
	dataNonce := make([]byte, nonceLen)
	rand.Read(dataNonce)
	out = append(out, dataNonce...)
	return data.Seal(out, dataNonce, plaintext, aad), nil
}

// Open decrypts a blob sealed by Seal with the same aad.
func (k *Keyring) Open(blob, aad []byte) ([]byte, error) {
	if len(blob) < headerLen+16 || blob[0] != version {
		return nil, errors.New("envelope: not a sealed blob")
	}
	e, ok := k.byID[string(blob[1:1+idLen])]
	if !ok {
		return nil, ErrUnknownKey
	}
	p := 1 + idLen
	wrapNonce := blob[p : p+nonceLen]
	p += nonceLen
	dek, err := e.aead.Open(nil, wrapNonce, blob[p:p+dekLen+16], blob[:1+idLen])
	if err != nil {
		return nil, errors.New("envelope: data key does not open: wrong key or tampered blob")
	}
	p += dekLen + 16
	data, err := newGCM(dek)
	if err != nil {
		return nil, err
	}
	plain, err := data.Open(nil, blob[p:p+nonceLen], blob[p+nonceLen:], aad)
	if err != nil {
		return nil, errors.New("envelope: blob does not open: tampered, or sealed for another place")
	}
	return plain, nil
}

// Current reports whether blob is sealed under the current KEK; blobs that
// are not can be rewrapped (Open then Seal) during a KEK rotation.
func (k *Keyring) Current(blob []byte) bool {
	return len(blob) > 1+idLen && bytes.Equal(blob[1:1+idLen], k.current.id[:])
}

// KeyIDOf names the KEK a blob was sealed under (hex, as KeyID), or ""
// when blob is not a sealed blob.
func KeyIDOf(blob []byte) string {
	if len(blob) < headerLen+16 || blob[0] != version {
		return ""
	}
	return hex.EncodeToString(blob[1 : 1+idLen])
}

// Rewrap opens blob with whichever KEK of the ring sealed it and seals the
// plaintext again under the current one, with the same aad.
func (k *Keyring) Rewrap(blob, aad []byte) ([]byte, error) {
	plain, err := k.Open(blob, aad)
	if err != nil {
		return nil, err
	}
	return k.Seal(plain, aad)
}

// SealJSON seals v encoded as JSON.
func (k *Keyring) SealJSON(v any, aad []byte) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return k.Seal(b, aad)
}

// OpenJSON opens a blob sealed by SealJSON into v.
func (k *Keyring) OpenJSON(blob, aad []byte, v any) error {
	b, err := k.Open(blob, aad)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

func newGCM(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}
