/* clock.c - to be written */
#include "clock.h"
