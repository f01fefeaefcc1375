package progress

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Reporter tracks one job. Its Set method has the func(done, total int64)
// shape that library packages take as their Progress option.
type Reporter struct {
	label    string
	bytes    bool
	w        io.Writer
	bar      *progressbar.ProgressBar
	start    time.Time
	lastLine time.Time
	lastFrac float64
}

// New returns a reporter for a job called label; bytes says whether the
// counts are bytes (shown as sizes) or items.
func New(label string, bytes bool) *Reporter {
	return newReporter(label, bytes, os.Stderr, term.IsTerminal(int(os.Stderr.Fd())))
}

func newReporter(label string, bytes bool, w io.Writer, tty bool) *Reporter {
	r := &Reporter{label: label, bytes: bytes, w: w, start: time.Now()}
	if tty {
		opts := []progressbar.Option{
			progressbar.OptionSetWriter(w), progressbar.OptionSetDescription(label),
			progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }), progressbar.OptionThrottle(100 * time.Millisecond),
		}
		if bytes {
			opts = append(opts, progressbar.OptionShowBytes(true))
		}
		r.bar = progressbar.NewOptions64(-1, opts...)
	}
	return r
}

// Set reports done of total units.
func (r *Reporter) Set(done, total int64) {
	if r.bar != nil {
		if r.bar.GetMax64() != total {
			r.bar.ChangeMax64(total)
		}
		r.bar.Set64(done)
		return
	}
	frac := float64(done) / float64(max(total, 1))
	now := time.Now()
	if done < total && frac-r.lastFrac < 0.1 && now.Sub(r.lastLine) < 10*time.Second {
		return
	}
	r.lastFrac, r.lastLine = frac, now
	el := now.Sub(r.start)
	eta := "?"
	if done > 0 {
		eta = (time.Duration(float64(el)/frac) - el).Round(time.Second).String()
	}
	fmt.Fprintf(r.w, "%s: %5.1f%% (%s of %s), elapsed %s, eta %s\n", r.label, 100*frac,
		r.amount(done), r.amount(total), el.Round(time.Second), eta)
}

func (r *Reporter) amount(n int64) string {
	if !r.bytes {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
}
