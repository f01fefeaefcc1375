// Package progress reports the progress of long jobs on stderr: a bar with
// rate and ETA when stderr is a terminal, plain lines (at most one per 10%
// of the work or per 10 seconds) otherwise, so logs stay readable.
package progress
