package migrate

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"
)

func TestLoad_OrdersByVersion(t *testing.T) {
	fsys := fstest.MapFS{
		"m/002_jobs.sql":   {Data: []byte("B")},
		"m/001_init.sql":   {Data: []byte("A")},
		"m/README.md":      {Data: []byte("ignored")},
		"m/003_events.sql": {Data: []byte("C")},
	}
	ms, err := Load(fsys, "m")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range ms {
		got = append(got, m.Name+"="+m.SQL)
	}
	if strings.Join(got, ",") != "init=A,jobs=B,events=C" {
		t.Fatalf("got %v", got)
	}
}

func TestLoad_RefusesGapsDuplicatesAndBadNames(t *testing.T) {
	for name, fsys := range map[string]fstest.MapFS{
		"gap":       {"m/001_a.sql": {}, "m/003_c.sql": {}},
		"duplicate": {"m/001_a.sql": {}, "m/001_b.sql": {}},
		"bad name":  {"m/one_a.sql": {}},
		"empty":     {"m/x.txt": {}},
	} {
		if _, err := Load(fsys, "m"); err == nil {
			t.Errorf("%s: Load accepted it", name)
		}
	}
}

func TestPending(t *testing.T) {
	all := []Migration{{Version: 1}, {Version: 2}, {Version: 3}}
	p, err := Pending(all, []int{2, 1})
	if err != nil || len(p) != 1 || p[0].Version != 3 {
		t.Fatalf("Pending = %v, %v", p, err)
	}
	if _, err := Pending(all, []int{1, 3}); err == nil {
		t.Error("history with a gap accepted")
	}
	if _, err := Pending(all, []int{1, 2, 3, 4}); err == nil {
		t.Error("database newer than binary accepted")
	}
	if err := Current(all, []int{1, 2}); err == nil || !strings.Contains(err.Error(), "streaming-hub migrate") {
		t.Errorf("Current on an old schema = %v", err)
	}
	if err := Current(all, []int{1, 2, 3}); err != nil {
		t.Errorf("Current on the newest schema = %v", err)
	}
}

func TestApply_RunsWhatIsPendingInOrderAndStopsAtTheFirstFailure(t *testing.T) {
	all := []Migration{{Version: 1, Name: "a"}, {Version: 2, Name: "b"}, {Version: 3, Name: "c"}}
	var ran []int
	if err := Apply(all, []int{1}, func(m Migration) error { ran = append(ran, m.Version); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(ran) != 2 || ran[0] != 2 || ran[1] != 3 {
		t.Fatalf("applied %v, want [2 3]", ran)
	}
	ran = nil
	err := Apply(all, nil, func(m Migration) error {
		ran = append(ran, m.Version)
		if m.Version == 2 {
			return errors.New("syntax error")
		}
		return nil
	})
	if err == nil || err.Error() != "002_b: syntax error" || len(ran) != 2 {
		t.Fatalf("Apply = %v after %v; want it to stop at 002_b, named", err, ran)
	}
	if err := Apply(all, []int{1, 3}, func(Migration) error { return nil }); err == nil {
		t.Error("a history with a gap was applied to")
	}
}
