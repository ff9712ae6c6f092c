#ifndef STARLING_CDBUS_SHIM_H
#define STARLING_CDBUS_SHIM_H
#include <dbus/dbus.h>
#endif
