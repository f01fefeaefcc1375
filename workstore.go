package forge

import (
	"fmt"

	"forge/bundle"
	"forge/lut"
)

// workKind is the marker kind of a quantize work directory.
const workKind = bundle.WorkKind

// workStore is the run's work directory, OUT.work (bundle.WorkDir: one
// file per finished matrix, checked by SHA-256 when loaded), under the
// names Quantize uses.
type workStore struct {
	wd  *bundle.WorkDir
	dir string
	// Damaged, if set, hears of each stored matrix that failed its check
	// and was removed to be made again.
	Damaged func(path string)
}

// openWork prepares OUT.work for a run with the given recipe: with resume
// it keeps a directory made with the same recipe (and refuses one made
// with another); without, it starts empty.
func openWork(out string, recipe []byte, resume bool) (*workStore, error) {
	ws := &workStore{dir: bundle.WorkPath(out)}
	wd, err := bundle.OpenWork(out, recipe, bundle.WorkOptions{Resume: resume, ForgeVersion: Version,
		Damaged: func(path string, _ error) {
			if ws.Damaged != nil {
				ws.Damaged(path)
			}
		}})
	if err != nil {
		return nil, fmt.Errorf("quantize: %w", err)
	}
	ws.wd = wd
	return ws, nil
}

func (ws *workStore) stored() int             { return ws.wd.Stored() }
func (ws *workStore) size() int64             { return ws.wd.Size() }
func (ws *workStore) close(remove bool) error { return ws.wd.Close(remove) }
func (ws *workStore) save(name string, m *lut.Matrix, snr *bundle.SNREntry) error {
	if err := ws.wd.Save(name, m, snr); err != nil {
		return fmt.Errorf("quantize: %w", err)
	}
	return nil
}

// load returns the stored matrix name (mapped from its file) and its SNRs,
// or ok = false if it is not stored (or was damaged and removed).
func (ws *workStore) load(name string) (m *lut.Matrix, snr *bundle.SNREntry, ok bool, err error) {
	m, snr, ok, err = ws.wd.Load(name)
	if err != nil {
		return nil, nil, false, fmt.Errorf("quantize: %w", err)
	}
	return m, snr, ok, nil
}
