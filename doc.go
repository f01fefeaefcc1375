// Package forge is the API of the forge tool: each job is a short function
// that reads top to bottom (Inspect, Logits, Synth; quantize, evaluate and
// serve follow), and cmd/forge maps flags onto their config structs.
package forge

// Version is forge's version, recorded in everything it writes.
const Version = "0.1.0-dev"
