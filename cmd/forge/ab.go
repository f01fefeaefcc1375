package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"forge"
	"forge/generate"
	"forge/internal/durable"
	"forge/internal/table"
)

// ABCmd is `forge ab`: speculative decoding against plain decoding.
type ABCmd struct {
	Model     string `required:"" type:"existingdir" help:"Target checkpoint or bundle directory (with its tokenizer)."`
	Prompt    string `arg:"" optional:"" help:"Prompt text, used as it is (no chat template)."`
	Messages  string `type:"existingfile" placeholder:"FILE" help:"A conversation as a JSON list of messages, rendered with the model's chat template."`
	Seeds     string `default:"1,2,3" placeholder:"S,S,..." help:"Seeds: one plain and one drafted reply each, from a cold state."`
	TF        int    `name:"tf" default:"1500" placeholder:"N" help:"Score the first plain reply's first N tokens teacher-forced, by decode steps and by verify blocks (0: skip)."`
	Block     int    `default:"8" placeholder:"T" help:"Rows per verify block in the teacher-forced part (1–17)."`
	EndMarker string `name:"end-marker" placeholder:"TEXT" help:"Record whether each reply contains TEXT (e.g. </html>)."`
	JSONFile  string `name:"json" placeholder:"FILE" help:"Write the records as JSON to FILE (which must not exist)."`
	PNG       string `name:"png" placeholder:"FILE" help:"Plot the teacher-forced KL by row of the block into FILE (a PNG; must not exist)."`
	GenFlags  `embed:""`
}

func (c *ABCmd) Run(ctx context.Context) error {
	cfg, err := c.config()
	if err != nil {
		return err
	}
	if c.Draft == "" {
		return errors.New("forge ab needs --draft")
	}
	if c.Block < 1 || c.Block > generate.MaxDraftK+1 {
		return fmt.Errorf("--block %d: want 1 to %d rows", c.Block, generate.MaxDraftK+1)
	}
	if c.TF < 0 {
		return fmt.Errorf("--tf %d: want 0 (skip) or more tokens", c.TF)
	}
	for _, f := range []string{c.JSONFile, c.PNG} {
		if f != "" {
			if _, err := os.Stat(f); err == nil {
				return fmt.Errorf("%s exists: forge ab never overwrites its records", f)
			}
		}
	}
	seeds, err := parseSeeds(c.Seeds)
	if err != nil {
		return err
	}
	cfg.Model = c.Model
	if cfg.Prompt, err = promptOf(c.Prompt, c.Messages, c.Think); err != nil {
		return err
	}
	rep, err := forge.AB(ctx, forge.ABConfig{RunConfig: cfg, Seeds: seeds, TF: c.TF, Block: c.Block, EndMarker: c.EndMarker,
		Progress: func(s string) { fmt.Fprintln(os.Stderr, "forge ab: "+s) }})
	if err != nil {
		return err
	}
	if err := abTables(rep); err != nil {
		return err
	}
	if c.JSONFile != "" {
		var buf bytes.Buffer
		e := json.NewEncoder(&buf)
		e.SetIndent("", "  ")
		e.SetEscapeHTML(false)
		if err := e.Encode(rep); err != nil {
			return err
		}
		if err := durable.WriteNew(c.JSONFile, buf.Bytes()); err != nil {
			return err
		}
	}
	if c.PNG != "" && len(rep.Rows) > 0 {
		return forge.PlotAB(rep, c.PNG)
	}
	return nil
}

// parseSeeds reads a comma-separated list of seeds.
func parseSeeds(s string) ([]uint64, error) {
	var out []uint64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("--seeds %q: %q is not a seed (a non-negative integer)", s, f)
		}
		out = append(out, v)
	}
	return out, nil
}

// abTables prints the runs, the per-mode summary and the teacher-forced rows.
func abTables(rep *forge.ABReport) error {
	fmt.Printf("build %s; model %s; drafter %s\n\n", rep.Build, rep.Model, rep.Draft)
	t := table.New("mode", "seed", "tokens", "finish", "loop", "rep4", "tok/s", "tok/call", "kept", "think done", "end marker").AlignRight(1, 2, 4, 5, 6, 7, 8)
	type sum struct {
		n, loops, done int
		rep4, tps      float64
	}
	sums := map[string]*sum{"plain": {}, "draft": {}}
	for _, r := range rep.Runs {
		kept, end := "", ""
		if r.Mode == "draft" {
			kept = fmt.Sprintf("%.0f%%", 100*r.AcceptRate)
		}
		if r.EndMarker != nil {
			end = strconv.FormatBool(*r.EndMarker)
		}
		t.Row(r.Mode, r.Seed, r.Tokens, r.Finish, r.Loop, fmt.Sprintf("%.3f", r.Rep4), fmt.Sprintf("%.1f", r.TokS),
			fmt.Sprintf("%.2f", r.TokCall), kept, r.ThinkDone, end)
		s := sums[r.Mode]
		s.n++
		s.rep4 += r.Rep4
		s.tps += r.TokS
		if r.Loop > 0 {
			s.loops++
		}
		if r.Finish == "stop" && r.Loop == 0 {
			s.done++
		}
	}
	if err := t.Write(os.Stdout); err != nil {
		return err
	}
	fmt.Println()
	st := table.New("mode", "runs", "loops", "finished", "mean rep4", "mean tok/s").AlignRight(1, 2, 3, 4, 5)
	for _, m := range []string{"plain", "draft"} {
		s := sums[m]
		st.Row(m, s.n, s.loops, s.done, fmt.Sprintf("%.3f", s.rep4/float64(max(s.n, 1))), fmt.Sprintf("%.1f", s.tps/float64(max(s.n, 1))))
	}
	if err := st.Write(os.Stdout); err != nil {
		return err
	}
	if len(rep.Rows) == 0 {
		return nil
	}
	fmt.Printf("\nteacher-forced: %d tokens of the first plain reply, decode steps against verify blocks of %d rows\n", rep.TF, rep.Block)
	ft := table.New("row", "positions", "KL(step‖block)", "± se", "top-1", "H step", "H block", "ΔH", "± se").AlignRight(0, 1, 2, 3, 4, 5, 6, 7, 8)
	rows := append(rep.Rows, *rep.All)
	for _, r := range rows {
		name := strconv.Itoa(r.Row)
		if r.Row < 0 {
			name = "all"
		}
		ft.Row(name, r.N, fmt.Sprintf("%.3g", r.KL), fmt.Sprintf("%.2g", r.KLSE), fmt.Sprintf("%.2f%%", 100*r.Top1),
			fmt.Sprintf("%.4f", r.HStep), fmt.Sprintf("%.4f", r.HBlock), fmt.Sprintf("%.3g", r.DH), fmt.Sprintf("%.2g", r.DHSE))
	}
	return ft.Write(os.Stdout)
}
