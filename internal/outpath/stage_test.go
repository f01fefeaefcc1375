package outpath

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// TestStage: Stage replaces forge's leftover OUT.partial of a dead process
// and refuses one of a live process or of the user's; Publish seals the
// directory and renames it to OUT (replacing forge's old output); Abort
// removes an unpublished OUT.partial and, after Publish, touches nothing.
func TestStage(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(out+".partial", "old.bin"), "leftover")
	if err := WriteMarker(out+".partial", Marker{Kind: PartialKind, PID: dead.Process.Pid}); err != nil {
		t.Fatal(err)
	}
	for round := range 2 { // the second replaces the first's output
		s, err := Stage(out, "v1")
		if err != nil {
			t.Fatal(err)
		}
		if m, ok := ReadMarker(s.Dir); !ok || m.Kind != PartialKind || m.PID != os.Getpid() {
			t.Fatalf("marker of %s: %+v", s.Dir, m)
		}
		if _, err := os.Stat(filepath.Join(s.Dir, "old.bin")); !os.IsNotExist(err) {
			t.Fatal("the leftover's file is still there")
		}
		write(t, filepath.Join(s.Dir, "data.bin"), string(rune('a'+round)))
		if err := s.Publish("checkpoint"); err != nil {
			t.Fatal(err)
		}
		m, ok := ReadMarker(out)
		if !ok || m.Kind != "checkpoint" || m.PID != 0 || !slices.Equal(m.Files, []string{"data.bin"}) {
			t.Errorf("published marker %+v", m)
		}
		if got, _ := os.ReadFile(filepath.Join(out, "data.bin")); string(got) != string(rune('a'+round)) {
			t.Errorf("round %d: data.bin holds %q", round, got)
		}
		os.Mkdir(s.Dir, 0o755) // another run's, started after Publish
		s.Abort()
		if _, err := os.Stat(s.Dir); err != nil {
			t.Error("Abort after Publish removed another run's directory")
		}
		os.Remove(s.Dir)
	}
	s, err := Stage(filepath.Join(dir, "gone"), "v1")
	if err != nil {
		t.Fatal(err)
	}
	s.Abort()
	if _, err := os.Stat(s.Dir); !os.IsNotExist(err) {
		t.Error("Abort left OUT.partial")
	}

	live := filepath.Join(dir, "live")
	if err := MakeDir(live+".partial", PartialKind, "v1"); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarker(live+".partial", Marker{Kind: PartialKind, PID: os.Getppid()}); err != nil {
		t.Fatal(err)
	}
	if _, err := Stage(live, "v1"); err == nil {
		t.Error("Stage removed the OUT.partial of a live process")
	}
	user := filepath.Join(dir, "user")
	write(t, filepath.Join(user+".partial", "keep.txt"), "mine")
	if _, err := Stage(user, "v1"); !errors.Is(err, ErrNotOwned) {
		t.Errorf("the user's OUT.partial: %v", err)
	}
	if _, err := os.Stat(filepath.Join(user+".partial", "keep.txt")); err != nil {
		t.Error("the user's file was removed")
	}
}
