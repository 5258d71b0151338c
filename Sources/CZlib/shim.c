#include "CZlib.h"

int czlib_deflate_init2(z_streamp strm, int level, int windowBits, int memLevel) {
    return deflateInit2(strm, level, Z_DEFLATED, windowBits, memLevel, Z_DEFAULT_STRATEGY);
}

int czlib_inflate_init2(z_streamp strm, int windowBits) {
    return inflateInit2(strm, windowBits);
}
