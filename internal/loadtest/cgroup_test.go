package loadtest

import "testing"

func TestParseCgroup_TheChartsNotation(t *testing.T) {
	for in, want := range map[string]CgroupLimits{
		"cpu=500m,memory=512Mi": {MilliCPU: 500, Memory: 512 << 20},
		"memory=1Gi, cpu=1.5":   {MilliCPU: 1500, Memory: 1 << 30},
		"cpu=250m,memory=65536": {MilliCPU: 250, Memory: 65536},
	} {
		got, err := ParseCgroup(in)
		if err != nil || got != want {
			t.Errorf("ParseCgroup(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "cpu=500m", "memory=512Mi", "cpu=-1,memory=1Mi", "cpu=500m,memory=lots", "gpu=1,cpu=1,memory=1Mi", "cpu"} {
		if _, err := ParseCgroup(bad); err == nil {
			t.Errorf("ParseCgroup(%q) accepted", bad)
		}
	}
}
