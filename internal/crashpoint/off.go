//go:build !faults

package crashpoint

func reach(string) {}

func lose(string) bool { return false }
