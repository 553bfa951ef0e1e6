// Package durable holds the file-system steps that make a write survive a
// crash, shared by the adapters that write files of their own (the
// PostgreSQL archive, the SQLite backup).
package durable

import "os"

// SyncDir makes the names in dir durable: a new file, a rename or a link
// is only on disk once its directory is synced.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
