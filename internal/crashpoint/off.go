//go:build !faults

package crashpoint

func reach(string) {}
