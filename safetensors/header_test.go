package safetensors

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

// rawFile assembles a file from a header text and dataLen zero data bytes,
// with no validation: the way to build hostile inputs.
func rawFile(header string, dataLen int) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	b = append(b, header...)
	return append(b, make([]byte, dataLen)...)
}

// withLength returns an 8-byte length N followed by rest.
func withLength(n uint64, rest string) []byte {
	return append(binary.LittleEndian.AppendUint64(nil, n), rest...)
}

const f32a = `"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}`

// hostileCases are invalid files, each with the words its error must hold.
var hostileCases = []struct {
	name string
	data []byte
	want string // substring the error must contain, besides the file name
}{
	{"empty file", nil, "file is 0 bytes, shorter than the 8-byte header length"},
	{"short file", []byte{1, 2, 3, 4, 5, 6, 7}, "file is 7 bytes"},
	{"header length zero", withLength(0, "{}"), "header length is 0"},
	{"header length over limit", withLength(100_000_001, "{}"), "header length 100000001 exceeds the 100000000-byte limit"},
	{"header length huge", withLength(1<<63, "{}"), "exceeds the 100000000-byte limit"},
	{"header past end", withLength(10, "{}"), "header length 10 passes the end of the file (2 bytes after the length)"},
	{"header not utf8", rawFile("{\"\xff\":1}", 0), "header is not valid UTF-8"},
	{"header not json", rawFile(`{"a" 1}`, 0), "header is not valid JSON"},
	{"header cut short", rawFile(`{"a":{"dtype"`, 0), "header is not valid JSON: unexpected end of JSON input (at byte 13)"},
	{"header only spaces", rawFile("        ", 0), "header is not valid JSON: unexpected end of JSON input"},
	{"header array", rawFile(`[1,2]`, 0), "header is an array, not a JSON object"},
	{"header string", rawFile(`"x"`, 0), "header is a string, not a JSON object"},
	{"header nested deep", rawFile(strings.Repeat("[", 100000), 0), "header is not valid JSON: invalid character '[' exceeded max depth"},
	{"header array deep", rawFile(strings.Repeat("[", 1000)+strings.Repeat("]", 1000), 0), "header is an array, not a JSON object"},
	{"trailing object", rawFile(`{} {}`, 0), "header is not valid JSON: invalid character '{' after top-level value (at byte 4)"},
	{"trailing garbage", rawFile(`{}x`, 0), "invalid character 'x' after top-level value"},
	{"trailing NUL", rawFile("{}\x00", 0), `invalid character '\x00' after top-level value`},
	{"entry number", rawFile(`{"a":3}`, 0), `tensor "a": entry is a number, not an object`},
	{"entry null", rawFile(`{"a":null}`, 0), `tensor "a": entry is null, not an object`},
	{"unknown key", rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"extra":1}}`, 4), `tensor "a": unknown key "extra"`},
	{"missing dtype", rawFile(`{"a":{"shape":[1],"data_offsets":[0,4]}}`, 4), `tensor "a": missing key "dtype"`},
	{"missing shape", rawFile(`{"a":{"dtype":"F32","data_offsets":[0,4]}}`, 4), `tensor "a": missing key "shape"`},
	{"missing offsets", rawFile(`{"a":{"dtype":"F32","shape":[1]}}`, 4), `tensor "a": missing key "data_offsets"`},
	{"dtype number", rawFile(`{"a":{"dtype":7,"shape":[1],"data_offsets":[0,4]}}`, 4), `tensor "a": dtype is a number, not a string`},
	{"unknown dtype", rawFile(`{"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}}`, 8), `tensor "a": unknown dtype "F64"`},
	{"lowercase dtype", rawFile(`{"a":{"dtype":"f32","shape":[1],"data_offsets":[0,4]}}`, 4), `unknown dtype "f32"`},
	{"shape string", rawFile(`{"a":{"dtype":"F32","shape":"1","data_offsets":[0,4]}}`, 4), `tensor "a": shape is a string, not an array of integers`},
	{"shape nested", rawFile(`{"a":{"dtype":"F32","shape":[[1]],"data_offsets":[0,4]}}`, 4), `shape holds an array, not an integer`},
	{"shape fraction", rawFile(`{"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}}`, 4), `shape holds 1.5, not an integer`},
	{"shape exponent", rawFile(`{"a":{"dtype":"F32","shape":[1e0],"data_offsets":[0,4]}}`, 4), `shape holds 1e0, not an integer`},
	{"shape out of range", rawFile(`{"a":{"dtype":"F32","shape":[99999999999999999999],"data_offsets":[0,4]}}`, 4), `shape holds 99999999999999999999, out of range`},
	{"negative dim", rawFile(`{"a":{"dtype":"F32","shape":[2,-1],"data_offsets":[0,4]}}`, 4), `tensor "a": shape holds negative value -1`},
	{"shape overflow", rawFile(`{"a":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,4]}}`, 4), `tensor "a": shape [4294967296 4294967296]: element count overflows`},
	{"byte size overflow", rawFile(`{"a":{"dtype":"I64","shape":[4611686018427387904],"data_offsets":[0,4]}}`, 4), `byte size overflows`},
	{"offsets one", rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4]}}`, 4), `tensor "a": data_offsets has 1 elements, want 2`},
	{"offsets three", rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}}`, 8), `data_offsets has 3 elements`},
	{"offsets negative", rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}}`, 4), `data_offsets holds negative value -4`},
	{"offsets null", rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":null}}`, 4), `data_offsets is null, not an array`},
	{"begin after end", rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}}`, 8), `tensor "a": data_offsets [8 4] begin after end`},
	{"size mismatch", rawFile(`{"a.weight":{"dtype":"BF16","shape":[3,4],"data_offsets":[0,20]}}`, 24),
		`tensor "a.weight": shape [3 4] × BF16 = 24 bytes but data_offsets span 20`},
	{"span past end", rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, 4), `tensor "a": data_offsets [0 8] pass the end of the 4-byte data area`},
	{"overlap", rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, 12),
		`tensors "a" [0, 8) and "b" [4, 12) overlap`},
	{"same span", rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"I32","shape":[1],"data_offsets":[0,4]}}`, 4), `overlap`},
	{"contained span", rawFile(`{"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]},"b":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}}`, 8), `overlap`},
	{"duplicate tensor", rawFile(`{`+f32a+`,`+f32a+`}`, 4), `duplicate key "a" in header`},
	{"duplicate escaped", rawFile(`{`+f32a+`,"\u0061":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8), `duplicate key "a" in header`},
	{"duplicate entry key", rawFile(`{"a":{"dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, 4), `tensor "a": duplicate key "dtype" in its entry`},
	{"metadata array", rawFile(`{"__metadata__":[]}`, 0), `__metadata__ is an array, not an object of strings`},
	{"metadata string", rawFile(`{"__metadata__":"pt"}`, 0), `__metadata__ is a string, not an object of strings`},
	{"metadata number value", rawFile(`{"__metadata__":{"format":1}}`, 0), `__metadata__ value of "format" is a number, not a string`},
	{"metadata object value", rawFile(`{"__metadata__":{"format":{}}}`, 0), `__metadata__ value of "format" is an object`},
	{"metadata duplicate key", rawFile(`{"__metadata__":{"k":"1","k":"2"}}`, 0), `duplicate key "k" in __metadata__`},
	{"metadata twice", rawFile(`{"__metadata__":{},"__metadata__":{}}`, 0), `duplicate key "__metadata__" in header`},
}

func TestOpenBytesHostile(t *testing.T) {
	const name = "hostile.safetensors"
	for _, c := range hostileCases {
		t.Run(c.name, func(t *testing.T) {
			f, err := OpenBytes(name, c.data)
			if err == nil {
				t.Fatalf("opened %v; want an error containing %q", f.Names(), c.want)
			}
			if !errors.Is(err, ErrFormat) {
				t.Errorf("error %q does not wrap ErrFormat", err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "safetensors "+name+": ") || !strings.Contains(msg, c.want) {
				t.Errorf("error = %q\nwant prefix %q and %q", msg, "safetensors "+name+": ", c.want)
			}
		})
	}
}

// TestOpenBytesAccepted covers inputs that look odd but are valid.
func TestOpenBytesAccepted(t *testing.T) {
	cases := []struct {
		name   string
		data   []byte
		tensor string // a tensor to check, or ""
		span   [2]int64
		meta   map[string]string
	}{
		{"empty header", rawFile(`{}`, 0), "", [2]int64{}, nil},
		{"space padded", rawFile(`{`+f32a+`}      `, 4), "a", [2]int64{0, 4}, nil},
		{"whitespace inside", rawFile("{ \n\t\"a\" : {\"dtype\" : \"F32\", \"shape\": [ 1 ], \"data_offsets\": [0, 4]} }", 4), "a", [2]int64{0, 4}, nil},
		{"key order free", rawFile(`{"a":{"data_offsets":[0,4],"shape":[1],"dtype":"F32"}}`, 4), "a", [2]int64{0, 4}, nil},
		{"null metadata", rawFile(`{"__metadata__":null,`+f32a+`}`, 4), "a", [2]int64{0, 4}, nil},
		{"metadata last", rawFile(`{`+f32a+`,"__metadata__":{"format":"pt"}}`, 4), "a", [2]int64{0, 4}, map[string]string{"format": "pt"}},
		{"gap between tensors", rawFile(`{`+f32a+`,"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}}`, 12), "b", [2]int64{8, 12}, nil},
		{"bytes after last span", rawFile(`{`+f32a+`}`, 100), "a", [2]int64{0, 4}, nil},
		{"scalar", rawFile(`{"s":{"dtype":"I64","shape":[],"data_offsets":[0,8]}}`, 8), "s", [2]int64{0, 8}, nil},
		{"empty tensor, empty data area", rawFile(`{"e":{"dtype":"F32","shape":[0,5],"data_offsets":[0,0]}}`, 0), "e", [2]int64{0, 0}, nil},
		{"empty span inside another", rawFile(`{"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]},"e":{"dtype":"U8","shape":[0],"data_offsets":[4,4]}}`, 8), "e", [2]int64{4, 4}, nil},
		{"unicode name", rawFile(`{"\u00e9\"<>":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}}`, 2), "é\"<>", [2]int64{0, 2}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := OpenBytes("ok.safetensors", c.data)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if c.tensor != "" {
				info, ok := f.Info(c.tensor)
				if !ok || info.Begin != c.span[0] || info.End != c.span[1] {
					t.Errorf("Info(%q) = %+v, %v; want span %v", c.tensor, info, ok, c.span)
				}
				if b, err := f.Bytes(c.tensor); err != nil || int64(len(b)) != c.span[1]-c.span[0] {
					t.Errorf("Bytes(%q) = %d bytes, %v", c.tensor, len(b), err)
				}
			}
			if got := f.Metadata(); len(got) != len(c.meta) || got["format"] != c.meta["format"] {
				t.Errorf("Metadata() = %v, want %v", got, c.meta)
			}
		})
	}
}
