/* SPDX-License-Identifier: MIT */
/*
 * console.c - 16550 serial console on COM1 (0x3f8) and a small printf.
 *
 * One spinlock serialises whole lines, taken with interrupts off so that an
 * interrupt handler on the same CPU can never spin on a lock its own CPU
 * holds.  Lines are formatted into a per-call buffer first, so the lock is
 * held only while bytes go out.
 */
#include <stdarg.h>

#include "kernel.h"

#define COM1 0x3f8

static spinlock_t console_lock;

void console_init(void)
{
	outb(COM1 + 1, 0x00); /* no interrupts */
	outb(COM1 + 3, 0x80); /* DLAB */
	outb(COM1 + 0, 0x01); /* 115200 baud */
	outb(COM1 + 1, 0x00);
	outb(COM1 + 3, 0x03); /* 8N1 */
	outb(COM1 + 2, 0xc7); /* FIFO on, cleared */
	outb(COM1 + 4, 0x03); /* DTR | RTS */
}

static void serial_putc(char c)
{
	/* LSR bit 5: transmit holding register empty. */
	for (unsigned i = 0; i < 100000 && !(inb(COM1 + 5) & 0x20); i++)
		cpu_pause();
	outb(COM1, (uint8_t)c);
}

struct buf {
	char *p;
	size_t n, cap;
};

static void put(struct buf *b, char c)
{
	if (b->n + 1 < b->cap)
		b->p[b->n++] = c;
}

static void put_num(struct buf *b, uint64_t v, unsigned base, int width, int zero, int neg)
{
	char tmp[24];
	int n = 0;

	do {
		tmp[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	if (neg)
		tmp[n++] = '-';
	for (int i = n; i < width; i++)
		put(b, zero ? '0' : ' ');
	while (n)
		put(b, tmp[--n]);
}

/* %[-][0][width][l|ll|z](d|u|x|s|c|%) -- what this kernel prints. */
static size_t vformat(char *out, size_t cap, const char *fmt, va_list ap)
{
	struct buf b = { out, 0, cap };

	for (; *fmt; fmt++) {
		int width = 0, zero = 0, left = 0, lng = 0;
		size_t start;

		if (*fmt != '%') {
			put(&b, *fmt);
			continue;
		}
		fmt++;
		if (*fmt == '-') {
			left = 1;
			fmt++;
		}
		if (*fmt == '0') {
			zero = 1;
			fmt++;
		}
		while (*fmt >= '0' && *fmt <= '9')
			width = width * 10 + (*fmt++ - '0');
		while (*fmt == 'l' || *fmt == 'z') {
			lng = 1;
			fmt++;
		}
		start = b.n;
		switch (*fmt) {
		case 'd': {
			int64_t v = lng ? va_arg(ap, int64_t) : va_arg(ap, int);

			put_num(&b, v < 0 ? (uint64_t)-v : (uint64_t)v, 10, left ? 0 : width, zero, v < 0);
			break;
		}
		case 'u':
		case 'x': {
			uint64_t v = lng ? va_arg(ap, uint64_t) : va_arg(ap, unsigned);

			put_num(&b, v, *fmt == 'x' ? 16 : 10, left ? 0 : width, zero, 0);
			break;
		}
		case 's': {
			const char *s = va_arg(ap, const char *);
			size_t len = strlen(s ? s : "(null)");

			if (!left)
				for (size_t i = len; i < (size_t)width; i++)
					put(&b, ' ');
			for (const char *q = s ? s : "(null)"; *q; q++)
				put(&b, *q);
			break;
		}
		case 'c':
			put(&b, (char)va_arg(ap, int));
			break;
		case '%':
			put(&b, '%');
			break;
		default:
			put(&b, '?');
			break;
		}
		if (left)
			while (b.n - start < (size_t)width)
				put(&b, ' ');
		if (!*fmt)
			break;
	}
	out[b.n] = 0;
	return b.n;
}

void kprintf(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	size_t n;
	uint64_t f;

	va_start(ap, fmt);
	n = vformat(line, sizeof(line), fmt, ap);
	va_end(ap);
	f = spin_lock_irqsave(&console_lock);
	for (size_t i = 0; i < n; i++) {
		if (line[i] == '\n')
			serial_putc('\r');
		serial_putc(line[i]);
	}
	spin_unlock_irqrestore(&console_lock, f);
}

/* QEMU isa-debug-exit: the whole VM ends here with status (code << 1) | 1.
 * Without that device (a real machine) halt. */
void kexit(uint32_t code)
{
	irq_disable();
	outl(0xf4, code);
	for (;;)
		__asm__ __volatile__("hlt");
}

void panic(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	irq_disable();
	va_start(ap, fmt);
	vformat(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* No lock: the CPU that panics may hold it.  Bytes may interleave. */
	for (const char *p = "\nPANIC: "; *p; p++)
		serial_putc(*p);
	for (const char *p = line; *p; p++) {
		if (*p == '\n')
			serial_putc('\r');
		serial_putc(*p);
	}
	serial_putc('\r');
	serial_putc('\n');
	kexit(EXIT_PANIC);
}
