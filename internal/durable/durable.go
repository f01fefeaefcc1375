// Package durable writes small files so that a crash or a full disk never
// leaves them half-written: write to a temporary file in the same
// directory, fsync, rename over the destination, fsync the directory.
// Large streamed files (safetensors shards) follow the same protocol in
// safetensors.Writer.
package durable

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// WriteFile atomically replaces path with data (mode 0644): either the old
// contents or the complete new ones are there afterwards, never a mix.
func WriteFile(path string, data []byte) error { return write(path, data, false) }

// WriteNew is WriteFile for a file that must not exist yet (records that
// are never overwritten): the complete file appears under path, or an
// error wrapping fs.ErrExist leaves what is there untouched.
func WriteNew(path string, data []byte) error { return write(path, data, true) }

func write(path string, data []byte, fresh bool) error {
	f, err := CreateTemp(path)
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after the rename
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if fresh { // a hard link fails where the name exists; rename would replace it
		if err := os.Link(tmp, path); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	} else if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// SyncDir makes renames in dir durable. Filesystems that cannot sync a
// directory (EINVAL, ENOTSUP) are not an error.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
