//go:build !linux

package loadtest

import "errors"

type cgroupV1 struct{}

func newCgroup(CgroupLimits) (*cgroupV1, error) {
	return nil, errors.New("bench: -cgroup needs Linux's cgroup v1 cpu and memory controllers")
}
func (*cgroupV1) add(int) error                     { return nil }
func (*cgroupV1) usage(l CgroupLimits) CgroupResult { return CgroupResult{Limits: l} }
func (*cgroupV1) remove()                           {}
