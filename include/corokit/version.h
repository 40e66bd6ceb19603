/* SPDX-License-Identifier: MIT */
/* corokit: the one source of the version. The Makefile reads these three
 * lines for the soname, the .pc file and the tarball name. */
#ifndef COROKIT_VERSION_H
#define COROKIT_VERSION_H

#define CORO_VERSION_MAJOR 0
#define CORO_VERSION_MINOR 1
#define CORO_VERSION_PATCH 0

#define CORO_VERSION_HEX \
    ((CORO_VERSION_MAJOR << 16) | (CORO_VERSION_MINOR << 8) | CORO_VERSION_PATCH)

#endif
