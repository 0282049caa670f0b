// Debian's libqrencode (libqrencode-dev): QR codes for the agent's terminal.
#include <qrencode.h>
