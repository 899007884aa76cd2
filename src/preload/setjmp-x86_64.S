/*
 * setjmp-x86_64.S - _setjmp, setjmp and __sigsetjmp for libweft-preload.so. setjmp returns
 * twice, so it cannot be wrapped by a C function (the context it saves would be the
 * wrapper's dead frame): these trampolines call weft_note_setjmp(env), which records the
 * jmp_buf and looks up the real function, then jump to it with the caller's stack untouched.
 */
	.text

	.globl	_setjmp
	.type	_setjmp, @function
_setjmp:
	pushq	%rdi			/* also aligns the stack for the call */
	call	weft_note_setjmp@PLT
	popq	%rdi
	movq	weft_real__setjmp@GOTPCREL(%rip), %rax
	jmp	*(%rax)
	.size	_setjmp, .-_setjmp

	.globl	setjmp
	.type	setjmp, @function
setjmp:
	pushq	%rdi
	call	weft_note_setjmp@PLT
	popq	%rdi
	movq	weft_real_setjmp@GOTPCREL(%rip), %rax
	jmp	*(%rax)
	.size	setjmp, .-setjmp

	.globl	__sigsetjmp
	.type	__sigsetjmp, @function
__sigsetjmp:
	pushq	%rdi
	pushq	%rsi
	subq	$8, %rsp		/* 16-byte alignment at the call */
	call	weft_note_setjmp@PLT
	addq	$8, %rsp
	popq	%rsi
	popq	%rdi
	movq	weft_real___sigsetjmp@GOTPCREL(%rip), %rax
	jmp	*(%rax)
	.size	__sigsetjmp, .-__sigsetjmp

	.section .note.GNU-stack,"",@progbits
