#ifndef CZLIB_H
#define CZLIB_H
#include <zlib.h>

// deflateInit2/inflateInit2 are macros in zlib.h; Swift cannot call them.
int czlib_deflate_init2(z_streamp strm, int level, int windowBits, int memLevel);
int czlib_inflate_init2(z_streamp strm, int windowBits);

#endif
