//go:build !openblas

package quant

// la is the pure-Go backend in builds without the openblas tag.
var la linalg = goLA{}
