package model

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestDeltaRows: a verify block's rows on one head through deltaRows (its
// fused passes where deltaRowsFast runs: dv a multiple of 128) leave the
// state and write the outputs of deltaStepFrom row by row, bit for bit,
// from another state (a block's first row reads the committed state) and
// in place, and the source is only read.
func TestDeltaRows(t *testing.T) {
	g := rand.New(rand.NewPCG(7, 8))
	for _, dims := range [][2]int{{128, 128}, {64, 128}, {16, 256}, {8, 384}, {32, 32}, {16, 48}} {
		for _, T := range []int{1, 2, 3, 8, 17} {
			for _, inPlace := range []bool{false, true} {
				dk, dv := dims[0], dims[1]
				name := fmt.Sprintf("dk=%d/dv=%d/T=%d/inplace=%v", dk, dv, T, inPlace)
				src := make([]float32, dk*dv)
				for i := range src {
					src[i] = float32(g.NormFloat64())
				}
				rows := make([]deltaRow, T)
				for r := range rows {
					q, k, v, gl, beta := randDeltaRow(g, dk, dv)
					rows[r] = deltaRow{q: q, k: k, v: v, o: make([]float32, dv), g: gl, beta: beta}
				}
				// Reference: one deltaStepFrom a row.
				want := make([]float32, dk*dv)
				from := src
				if inPlace {
					copy(want, src)
					from = want
				}
				wantO := make([][]float32, T)
				w := make([]float32, dv)
				for r, row := range rows {
					wantO[r] = make([]float32, dv)
					deltaStepFrom(want, from, row.q, row.k, row.v, row.g, row.beta, wantO[r], w)
					from = want
				}
				kept := append([]float32(nil), src...)
				S := make([]float32, dk*dv)
				for i := range S {
					S[i] = 7 // stale: every element must be written
				}
				from = src
				if inPlace {
					copy(S, src)
					from = S
				}
				deltaRows(S, from, rows, make([]float32, dv), make([]float32, dv))
				for i := range S {
					if !sameBits(S[i], want[i]) {
						t.Fatalf("%s: S[%d] = %v, row by row %v", name, i, S[i], want[i])
					}
				}
				for r := range rows {
					for j := range dv {
						if !sameBits(rows[r].o[j], wantO[r][j]) {
							t.Fatalf("%s: row %d o[%d] = %v, row by row %v", name, r, j, rows[r].o[j], wantO[r][j])
						}
					}
				}
				if !inPlace {
					for i := range src {
						if !sameBits(src[i], kept[i]) {
							t.Fatalf("%s: the source changed at %d", name, i)
						}
					}
				}
			}
		}
	}
}
