// Package units formats quantities for people to read: sizes in binary
// units (KiB = 1024 B, MiB, GiB, TiB, PiB). It is forge's one byte
// formatter; messages, errors and reports all call it.
//
// Two precisions exist because forge prints sizes for two purposes, and
// their strings are kept as they were when the formatters were merged:
//
//	Bytes         one decimal        "512 B", "1.5 KiB", "1.1 MiB", "3.0 GiB"     messages and errors
//	BytesPrecise  two from MiB up    "512 B", "1.5 KiB", "3.10 MiB", "14.34 GiB" reports (inspect, eval, eval compare)
//
// Reports put sizes that differ by a few percent side by side, so they
// keep two decimals where one would hide the difference.
package units
