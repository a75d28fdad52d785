package destination

import "regexp"

// Describe is Explain's text for err when the destination as its tenant
// wrote it is not known (the manifest sources, a driver's own words).
func Describe(err error) string {
	return Explain(err, Written{}, 0)
}

// addrPattern finds IPv4 and IPv6 addresses, with or without a port.
var addrPattern = regexp.MustCompile(`\[?[0-9a-fA-F]*:[0-9a-fA-F:.]+\]?(:\d+)?|\b\d{1,3}(\.\d{1,3}){3}(:\d+)?\b`)

// Described is err with Describe's text, for a tenant to read; errors.As
// and errors.Is still see err.
func Described(err error) error {
	if err == nil {
		return nil
	}
	return describedError{err}
}

type describedError struct{ err error }

func (e describedError) Error() string { return Describe(e.err) }
func (e describedError) Unwrap() error { return e.err }
