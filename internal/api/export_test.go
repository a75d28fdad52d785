package api

import "time"

// SetPullRecheck sets how long s's long polls wait between looks when no
// wake-up comes (1 s in production).
func SetPullRecheck(s *Server, d time.Duration) { s.pullRecheck = d }
