package envelope

import (
	"bytes"
	"errors"
	"testing"
)

func key(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

func TestSealOpen_RoundTripAndPlaceBinding(t *testing.T) {
	k, err := NewKeyring(key(1))
	if err != nil {
		t.Fatal(err)
	}
	secret := []byte("whsec_c2VjcmV0")
	blob, err := k.Seal(secret, []byte("subscription/a"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(blob, secret) {
		t.Fatal("plaintext visible in the blob")
	}
	got, err := k.Open(blob, []byte("subscription/a"))
	if err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("Open = %q, %v", got, err)
	}
	if _, err := k.Open(blob, []byte("subscription/b")); err == nil {
		t.Fatal("a blob copied to another subscription opened")
	}
	again, _ := k.Seal(secret, []byte("subscription/a"))
	if bytes.Equal(blob, again) {
		t.Fatal("two seals of the same value are identical: data keys or nonces repeat")
	}
}

func TestOpen_RefusesTamperingAndStrangers(t *testing.T) {
	k, _ := NewKeyring(key(1))
	blob, _ := k.Seal([]byte("value"), nil)
	for i := range blob {
		bad := bytes.Clone(blob)
		bad[i] ^= 0x01
		if _, err := k.Open(bad, nil); err == nil {
			t.Fatalf("flipping byte %d still opened", i)
		}
	}
	other, _ := NewKeyring(key(2))
	if _, err := other.Open(blob, nil); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("another KEK: %v, want ErrUnknownKey", err)
	}
	if _, err := k.Open([]byte("short"), nil); err == nil {
		t.Fatal("garbage opened")
	}
	if _, err := NewKeyring(make([]byte, 31)); err == nil {
		t.Fatal("a 31-byte KEK was accepted")
	}
}

func TestRotation_PreviousKeysOpenAndRewrapMovesToCurrent(t *testing.T) {
	old, _ := NewKeyring(key(1))
	blob, _ := old.Seal([]byte("value"), []byte("x"))
	rotated, _ := NewKeyring(key(2), key(1))
	if rotated.Current(blob) {
		t.Fatal("old blob reported as current")
	}
	plain, err := rotated.Open(blob, []byte("x"))
	if err != nil || string(plain) != "value" {
		t.Fatalf("previous KEK did not open: %v", err)
	}
	rewrapped, _ := rotated.Seal(plain, []byte("x"))
	if !rotated.Current(rewrapped) || rotated.KeyID() == old.KeyID() {
		t.Fatal("rewrap did not move to the current KEK")
	}
	onlyNew, _ := NewKeyring(key(2))
	if _, err := onlyNew.Open(rewrapped, []byte("x")); err != nil {
		t.Fatalf("rewrapped blob needs the old KEK: %v", err)
	}
}

func TestSealJSON(t *testing.T) {
	k, _ := NewKeyring(key(3))
	blob, err := k.SealJSON(map[string]string{"token": "t0k3n"}, []byte("a"))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]string
	if err := k.OpenJSON(blob, []byte("a"), &v); err != nil || v["token"] != "t0k3n" {
		t.Fatalf("%v %v", v, err)
	}
}
