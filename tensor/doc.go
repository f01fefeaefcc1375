// Package tensor holds forge's numeric leaf: row-major float32 matrices,
// bf16/fp16 ↔ fp32 conversion, and the dense matrix kernels (each fast
// kernel beside a plain reference twin that tests compare it with).
//
// tensor imports nothing from forge. Types here satisfy model's interfaces
// structurally (model.Linear is met by *Dense).
package tensor
