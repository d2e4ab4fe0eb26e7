; Tiled matmul C[M,N] = A[M,K] @ B[K,N]: f16 inputs, f32 accumulation and output, row-major.
; One 32x32 tile of C per program instance (grid: N/32 x M/32), a hardware loop over K in steps
; of 32, double-buffered: the DMA of step k+1 is in flight while the matrix unit works on step k.
; Run: plate run-asm examples/asm/matmul.pasm --grid 8,8 \
;        --arg a=randn:f16:65536 --arg b=randn:f16:65536 --arg c=zeros:f32:65536 \
;        --arg M=256 --arg N=256 --arg K=256 \
;        --expect "c = (a.astype('f4').reshape(256, 256) @ b.astype('f4').reshape(256, 256)).ravel()"
.kernel matmul
.arg a ptr
.arg b ptr
.arg c ptr
.arg M i32
.arg N i32
.arg K i32
.tile A0 f16[32,32] @0x0
.tile B0 f16[32,32] @0x800
.tile A1 f16[32,32] @0x1000
.tile B1 f16[32,32] @0x1800
.tile C f32[32,32] @0x2000
    s.pid.x r0                    ; tile column
    s.pid.y r1                    ; tile row
    s.arg r2, 3                   ; M
    s.arg r3, 4                   ; N
    s.arg r4, 5                   ; K
    s.li r5, 32
    s.li r6, 2                    ; bytes per f16
    s.mul.i64 r7, r1, r5          ; row0 = pid_y * 32
    s.mul.i64 r8, r0, r5          ; col0 = pid_x * 32
    s.sub.i64 r9, r2, r7          ; valid rows: M - row0
    s.sub.i64 r10, r3, r8         ; valid cols: N - col0
    s.mov r11, r4                 ; valid k of the current step: K - k0
    s.mul.i64 r12, r7, r4
    s.mul.i64 r12, r12, r6
    s.arg r13, 0
    s.add.i64 r13, r13, r12       ; &A[row0, 0]
    s.mul.i64 r14, r8, r6
    s.arg r15, 1
    s.add.i64 r15, r15, r14       ; &B[0, col0]
    s.mul.i64 r16, r5, r6         ; A step: 32 columns
    s.mul.i64 r17, r3, r5
    s.mul.i64 r17, r17, r6        ; B step: 32 rows
    s.li r18, 1
    s.li r19, 0
    s.add.i64 r20, r4, r5
    s.li r21, 1
    s.sub.i64 r20, r20, r21
    s.divs.i64 r20, r20, r5       ; k steps = ceil(K / 32), taken two at a time below
    v.fill C, 0.0
    dma.load q0, A0, r13, [r4, r18], [r19, r19], [r9, r11], 0.0
    dma.load q1, B0, r15, [r3, r18], [r19, r19], [r11, r10], 0.0
kloop:
    s.add.i64 r13, r13, r16
    s.add.i64 r15, r15, r17
    s.sub.i64 r11, r11, r5
    dma.load q2, A1, r13, [r4, r18], [r19, r19], [r9, r11], 0.0
    dma.load q3, B1, r15, [r3, r18], [r19, r19], [r11, r10], 0.0
    dma.wait q0
    dma.wait q1
    m.mma.ieee C, A0, B0
    s.sub.i64 r20, r20, r21
    bz r20, done
    s.add.i64 r13, r13, r16
    s.add.i64 r15, r15, r17
    s.sub.i64 r11, r11, r5
    dma.load q0, A0, r13, [r4, r18], [r19, r19], [r9, r11], 0.0
    dma.load q1, B0, r15, [r3, r18], [r19, r19], [r11, r10], 0.0
    dma.wait q2
    dma.wait q3
    m.mma.ieee C, A1, B1
    loop r20, kloop
    dma.wait q0                   ; the last prefetch reads nothing (k masked off) but is still waited for
    dma.wait q1
    jmp store
done:
    dma.wait q2
    dma.wait q3
store:
    s.mul.i64 r22, r7, r3
    s.add.i64 r22, r22, r8
    s.li r23, 4
    s.mul.i64 r22, r22, r23
    s.arg r24, 2
    s.add.i64 r24, r24, r22       ; &C[row0, col0]
    dma.store q4, C, r24, [r3, r18], [r19, r19], [r9, r10]
    dma.wait q4
    halt
