// Package source opens what forge reads as a model: a directory that is a
// forge bundle (it has forge.json) or a Hugging Face checkpoint (Open,
// OpenCheckpoint, Load), the ablation of a reference with some matrices
// taken from a quantized candidate (Ablation, Ablated), and a model's one
// identity (Fingerprint).
//
// A Source is a model.Source that must be closed: *bundle.Bundle,
// *checkpoint.Checkpoint or *Ablated. OpenCheckpoint refuses a bundle, or
// the remains of an unfinished one (bundle.Incomplete), with an error that
// says what the directory is.
//
// # Fingerprints
//
// Fingerprint is the one definition of which model a file was computed
// with, recorded in traces (eval.Meta: model_kind, fingerprint) and in
// llama.cpp-mode bases (model_kind, model_fingerprint):
//
//	checkpoint  checkpoint.Fingerprint: SHA-256 of config.json and every
//	            shard's name, size and header (layout, not weights)
//	bundle      SHA-256 of forge.json, which holds every file's SHA-256
//
// Both are 64 hex digits; the kind is recorded beside the digest, never as
// a prefix. llama.cpp-mode bases written before this package spelled a
// bundle's digest "bundle:" + digest and recorded no kind; they still open,
// and lcpp.Header.Model reads them as kind "bundle" with the bare digest,
// so they compare equal with a base written now. Traces never had the
// prefix and are unchanged. Origin is a different fact: the fingerprint of
// the checkpoint a model was made from (a bundle's manifest records its
// source's), compared with a trace's to warn when a candidate was not
// quantized from the trace's reference.
//
// Package corpus's Recipe.Fingerprint identifies token rows, not a model.
//
// The package sits above bundle and checkpoint (it imports them, model and
// plan) and below the root's jobs, which it never imports; it never prints.
package source
