/* calendar.c - to be written */
#include "calendar.h"
