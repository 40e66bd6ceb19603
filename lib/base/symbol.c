/* SPDX-License-Identifier: MIT */
/* Layer 0 (base): the name of a function from its address, for the dump,
 * the stall report, a refused body and the trace.
 *
 * dladdr knows only the dynamic symbol table: exported functions, and the
 * program's own only when it was linked with -rdynamic.  A coroutine body
 * is usually a static function of the program, which dladdr cannot name
 * (and it names the nearest exported symbol before it instead, which is a
 * wrong name: so only an exact or in-range match of dladdr is used).  The
 * object's full symbol table (.symtab, kept unless the file was stripped)
 * has them all, so the fallback reads it from the object's file: open,
 * map, one pass over the symbols, unmap.  Nothing is cached (the callers
 * are rare: a dump, a stall, a trace written at destroy), so nothing is
 * left allocated for valgrind to see after coro_sched_destroy.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base.h"

/* the FUNC symbol of image (size n, section table checked) holding rel */
static const char *elf_find(const unsigned char *img, size_t n, uintptr_t rel, uintptr_t *off)
{
    const ElfW(Ehdr) *eh = (const void *)img;
    if (n < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
        eh->e_ident[EI_CLASS] != (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32) ||
        eh->e_shentsize != sizeof(ElfW(Shdr)) || eh->e_shoff > n ||
        (size_t)eh->e_shnum * sizeof(ElfW(Shdr)) > n - eh->e_shoff)
        return NULL;
    const ElfW(Shdr) *sh = (const void *)(img + eh->e_shoff);
    /* .symtab when there is one (every symbol), else .dynsym */
    for (int pass = 0; pass < 2; pass++) {
        unsigned want = pass == 0 ? SHT_SYMTAB : SHT_DYNSYM;
        for (unsigned i = 0; i < eh->e_shnum; i++) {
            if (sh[i].sh_type != want || sh[i].sh_link >= eh->e_shnum ||
                sh[i].sh_entsize != sizeof(ElfW(Sym)) || sh[i].sh_offset > n ||
                sh[i].sh_size > n - sh[i].sh_offset)
                continue;
            const ElfW(Shdr) *st = &sh[sh[i].sh_link];
            if (st->sh_offset > n || st->sh_size > n - st->sh_offset || st->sh_size == 0)
                continue;
            const char *str = (const char *)img + st->sh_offset;
            const ElfW(Sym) *sym = (const void *)(img + sh[i].sh_offset);
            size_t nsym = sh[i].sh_size / sizeof *sym;
            for (size_t k = 0; k < nsym; k++) {
                if (ELF64_ST_TYPE(sym[k].st_info) != STT_FUNC || sym[k].st_shndx == SHN_UNDEF ||
                    sym[k].st_name >= st->sh_size)
                    continue;
                uintptr_t v = (uintptr_t)sym[k].st_value;
                if (rel == v || (rel > v && rel - v < (uintptr_t)sym[k].st_size)) {
                    /* the string table ends with a NUL (checked by the
                     * caller's copy, which stops at the table's end) */
                    *off = rel - v;
                    return str + sym[k].st_name;
                }
            }
        }
    }
    return NULL;
}

/* look rel up in the file at path; copies the name into buf */
static int file_lookup(const char *path, uintptr_t addr, uintptr_t base, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat stt;
    int rc = -1;
    if (fstat(fd, &stt) == 0 && stt.st_size > 0) {
        size_t n = (size_t)stt.st_size;
        unsigned char *img = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
        if (img != MAP_FAILED) {
            const ElfW(Ehdr) *eh = (const void *)img;
            /* a position-independent object's symbols are relative to its
             * load address; a fixed executable's are absolute */
            uintptr_t rel = n >= sizeof *eh && eh->e_type == ET_DYN ? addr - base : addr;
            uintptr_t off = 0;
            const char *name = elf_find(img, n, rel, &off);
            if (name) {
                size_t max = n - (size_t)(name - (const char *)img);
                size_t l = strnlen(name, max);
                if (l < max && l > 0) {
                    if (off)
                        snprintf(buf, len, "%.*s+0x%jx", (int)l, name, (uintmax_t)off);
                    else
                        snprintf(buf, len, "%.*s", (int)l, name);
                    rc = 0;
                }
            }
            munmap(img, n);
        }
    }
    close(fd);
    return rc;
}

/* the same file? (the program as dladdr names it may be a relative path
 * that no longer resolves from the current directory) */
static bool same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

const char *coro__sym_name(const void *fn, char *buf, size_t len)
{
    Dl_info di;
    int e = errno;      /* open, stat: errno is the caller's */
    const char *res = NULL;

    if (!fn || !buf || len == 0)
        return NULL;
    memset(&di, 0, sizeof di);
    if (dladdr(fn, &di) && di.dli_sname && di.dli_saddr == fn) {
        snprintf(buf, len, "%s", di.dli_sname);
        return buf;
    }
    const char *path = "/proc/self/exe";
    uintptr_t base = (uintptr_t)di.dli_fbase;
    if (di.dli_fname && di.dli_fname[0] && !same_file(di.dli_fname, path) &&
        access(di.dli_fname, R_OK) == 0)
        path = di.dli_fname;
    if (file_lookup(path, (uintptr_t)fn, base, buf, len) == 0)
        res = buf;
    errno = e;
    return res;
}
