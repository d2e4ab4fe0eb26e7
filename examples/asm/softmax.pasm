; Row softmax, one row of up to 1024 columns per program instance.
; Run: plate run-asm examples/asm/softmax.pasm --grid 1024 \
;        --arg out=zeros:f32:1048576 --arg inp=randn:f32:1048576 --arg in_stride=1024 \
;        --arg out_stride=1024 --arg n_cols=1024 \
;        --expect "out = softmax(inp.reshape(1024, 1024)).ravel()"
.kernel softmax
.arg out ptr
.arg inp ptr
.arg in_stride i32
.arg out_stride i32
.arg n_cols i32
.tile X f32[1024] @0x0
.tile M f32[] @0x1000                 ; row max
.tile Mb f32[1024] strides(0) @0x1000 ; the row max broadcast along the row
.tile S f32[] @0x1040                 ; row sum
.tile Sb f32[1024] strides(0) @0x1040
    s.pid.x r0                    ; row
    s.li r3, 4
    s.arg r1, 2
    s.mul.i64 r2, r0, r1
    s.mul.i64 r2, r2, r3
    s.arg r4, 1
    s.add.i64 r4, r4, r2          ; &inp[row, 0]
    s.arg r5, 3
    s.mul.i64 r6, r0, r5
    s.mul.i64 r6, r6, r3
    s.arg r7, 0
    s.add.i64 r7, r7, r6          ; &out[row, 0]
    s.arg r8, 4                   ; columns < n_cols are valid
    s.li r9, 1
    s.li r10, 0
    dma.load q0, X, r4, [r9], [r10], [r8], -inf
    dma.wait q0
    v.reduce.maxnum M, X, 0
    v.sub X, X, Mb
    v.exp X, X
    v.reduce.add S, X, 0
    v.div X, X, Sb
    dma.store q1, X, r7, [r9], [r10], [r8]
    dma.wait q1
    halt
