//! The record side of the protocol's field lists (see `rpcarena_protocol::fields`): each list
//! given to [`record_struct!`] becomes the type `samples.jsonl` keeps, with counters as JSON
//! numbers, and a `From` conversion from its wire event(s) that moves every field. A field is
//! written once, in its list in `protocol`; nothing here names a field.

/// Makes a record type and its conversion from a field list. One `wire` block gives
/// `From<Wire>`; two give `From<(First, Second)>`, the record taking the first's fields, then the
/// second's. Used as `rpcarena_protocol::transport_fields!(record_struct);`.
macro_rules! record_struct {
    ($(#[$rmeta:meta])* record $record:ident;
     $(#[$wmeta:meta])* wire $wire:ident { $($fields:tt)* }) => {
        $crate::fields::record_struct!(@munch
            [$(#[$rmeta])* $record] [rpcarena_protocol::event::$wire] [wire]
            [] [] [wire] $($fields)* ;);
    };
    ($(#[$rmeta:meta])* record $record:ident;
     $(#[$ameta:meta])* wire $a:ident { $($afields:tt)* }
     $(#[$bmeta:meta])* wire $b:ident { $($bfields:tt)* }) => {
        $crate::fields::record_struct!(@munch
            [$(#[$rmeta])* $record]
            [(rpcarena_protocol::event::$a, rpcarena_protocol::event::$b)] [(first, second)]
            [] [] [first] $($afields)* ; [second] $($bfields)* ;);
    };
    // The last wire block is done: the struct and its conversion.
    (@munch [$(#[$rmeta:meta])* $record:ident] [$($from:tt)*] [$($pat:tt)*]
     [$($fields:tt)*] [$($inits:tt)*] [$src:ident] ;) => {
        $(#[$rmeta])*
        #[derive(serde::Serialize, serde::Deserialize, Debug, Clone, PartialEq, Default)]
        pub struct $record { $($fields)* }

        impl From<$($from)*> for $record {
            fn from($($pat)*: $($from)*) -> $record {
                $record { $($inits)* }
            }
        }
    };
    // One wire block is done: go on with the next one's fields.
    (@munch $head:tt $from:tt $pat:tt $fields:tt $inits:tt [$src:ident] ; [$next:ident]
     $($rest:tt)*) => {
        $crate::fields::record_struct!(@munch $head $from $pat $fields $inits [$next] $($rest)*);
    };
    (@munch $head:tt $from:tt $pat:tt [$($fields:tt)*] [$($inits:tt)*] [$src:ident]
     $(#[$m:meta])* $f:ident: plain($t:ty), $($rest:tt)*) => {
        $crate::fields::record_struct!(@munch $head $from $pat
            [$($fields)* $(#[$m])* pub $f: $t,] [$($inits)* $f: $src.$f,] [$src] $($rest)*);
    };
    (@munch $head:tt $from:tt $pat:tt [$($fields:tt)*] [$($inits:tt)*] [$src:ident]
     $(#[$m:meta])* $f:ident: counter, $($rest:tt)*) => {
        $crate::fields::record_struct!(@munch $head $from $pat
            [$($fields)* $(#[$m])* pub $f: u64,] [$($inits)* $f: $src.$f,] [$src] $($rest)*);
    };
    (@munch $head:tt $from:tt $pat:tt [$($fields:tt)*] [$($inits:tt)*] [$src:ident]
     $(#[$m:meta])* $f:ident: opt($t:ty), $($rest:tt)*) => {
        $crate::fields::record_struct!(@munch $head $from $pat
            [$($fields)* $(#[$m])* #[serde(default, skip_serializing_if = "Option::is_none")]
             pub $f: Option<$t>,]
            [$($inits)* $f: $src.$f,] [$src] $($rest)*);
    };
    (@munch $head:tt $from:tt $pat:tt [$($fields:tt)*] [$($inits:tt)*] [$src:ident]
     $(#[$m:meta])* $f:ident: opt_counter, $($rest:tt)*) => {
        $crate::fields::record_struct!(@munch $head $from $pat
            [$($fields)* $(#[$m])* #[serde(default, skip_serializing_if = "Option::is_none")]
             pub $f: Option<u64>,]
            [$($inits)* $f: $src.$f,] [$src] $($rest)*);
    };
    (@munch $head:tt $from:tt $pat:tt [$($fields:tt)*] [$($inits:tt)*] [$src:ident]
     $(#[$m:meta])* $f:ident: counter_map, $($rest:tt)*) => {
        $crate::fields::record_struct!(@munch $head $from $pat
            [$($fields)* $(#[$m])*
             #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
             pub $f: std::collections::BTreeMap<String, u64>,]
            [$($inits)* $f: $src.$f,] [$src] $($rest)*);
    };
    (@munch $head:tt $from:tt $pat:tt [$($fields:tt)*] [$($inits:tt)*] [$src:ident]
     $(#[$m:meta])* $f:ident: list($w:ty => $r:ty), $($rest:tt)*) => {
        $crate::fields::record_struct!(@munch $head $from $pat
            [$($fields)* $(#[$m])* #[serde(default, skip_serializing_if = "Vec::is_empty")]
             pub $f: Vec<$r>,]
            [$($inits)* $f: $src.$f.into_iter().map(<$r>::from).collect(),] [$src] $($rest)*);
    };
    (@munch $head:tt $from:tt $pat:tt [$($fields:tt)*] [$($inits:tt)*] [$src:ident]
     $(#[$m:meta])* $f:ident: boxed($w:ty => $r:ty), $($rest:tt)*) => {
        $crate::fields::record_struct!(@munch $head $from $pat
            [$($fields)* $(#[$m])* #[serde(default, skip_serializing_if = "Option::is_none")]
             pub $f: Option<$r>,]
            [$($inits)* $f: $src.$f.map(|boxed| <$r>::from(*boxed)),] [$src] $($rest)*);
    };
}
pub(crate) use record_struct;
