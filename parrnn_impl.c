/* The implementation of parrnn.h, compiled once: the pattern the README
 * shows for applications. Every test, example, benchmark and tool of the
 * project links this file compiled with its configuration's flags. */
#define PARRNN_IMPLEMENTATION
#include "parrnn.h"
