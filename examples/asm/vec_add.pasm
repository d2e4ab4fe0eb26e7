; Vector add, one 1024-element block per program instance: o[i] = x[i] + y[i] for i < n.
; Run: plate run-asm examples/asm/vec_add.pasm --grid 1024 \
;        --arg x=rand:f32:1048576 --arg y=rand:f32:1048576 --arg o=zeros:f32:1048576 --arg n=1048576 \
;        --expect "o = x + y"
.kernel vec_add
.arg x ptr
.arg y ptr
.arg o ptr
.arg n i32
.tile X f32[1024] @0x0
.tile Y f32[1024] @0x1000
.tile Z f32[1024] @0x2000
    s.pid.x r0
    s.li r1, 1024
    s.mul.i64 r2, r0, r1          ; first element of this block
    s.arg r3, 3
    s.sub.i64 r4, r3, r2          ; valid elements: i < n - start
    s.li r5, 4
    s.mul.i64 r6, r2, r5          ; byte offset of the block
    s.arg r7, 0
    s.add.i64 r7, r7, r6
    s.arg r8, 1
    s.add.i64 r8, r8, r6
    s.arg r9, 2
    s.add.i64 r9, r9, r6
    s.li r10, 1                   ; element stride
    s.li r11, 0                   ; lower bound
    dma.load q0, X, r7, [r10], [r11], [r4], 0.0
    dma.load q1, Y, r8, [r10], [r11], [r4], 0.0
    dma.wait q0
    dma.wait q1
    v.add Z, X, Y
    dma.store q2, Z, r9, [r10], [r11], [r4]
    dma.wait q2
    halt
