package destination

import "regexp"

// Describe is Explain's text for err when the destination as its tenant
// wrote it is not known (the manifest sources, a driver's own words).
func Describe(err error) string {
	return Explain(err, Written{}, 0)
}

// addrPattern finds IPv4 and IPv6 addresses, with or without a port.
var addrPattern = regexp.MustCompile(`\[?[0-9a-fA-F]*:[0-9a-fA-F:.]+\]?(:\d+)?|\b\d{1,3}(\.\d{1,3}){3}(:\d+)?\b`)
