// Package event is the vocabulary shared by every part of layercast: node and
// group identifiers, event kinds, the Event that layers exchange, the Message
// with its prependable header area, and the membership views.
//
// A layer receives an *Event from above (going down) or from below (going up),
// reacts, and passes events on through its stack.Context. Data events carry a
// *Message: going down, each layer prepends its header with Message.Prepend;
// going up, each layer takes its header off the front with Message.Consume.
// Nothing is copied on the way.
package event
