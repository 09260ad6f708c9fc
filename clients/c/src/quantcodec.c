/* The implementation of the single header, compiled once into libquantcodec (CMake's
   quantcodec::quantcodec, pkg-config's quantcodec): a program that links it includes
   quantcodec.h plainly and defines nothing. */
#define QUANTCODEC_IMPLEMENTATION
#include "quantcodec.h"
