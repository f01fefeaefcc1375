//go:build openblas && !cgo

package quant

// The openblas build tag links OpenBLAS through cgo. Failing to compile
// here (rather than quietly falling back to the pure-Go backend) keeps a
// build from silently ignoring the tag: build with CGO_ENABLED=1.
var _ = the_openblas_build_tag_needs_cgo_CGO_ENABLED_1
